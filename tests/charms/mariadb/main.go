// Command mariadb is a test-only database charm on the charm kit: Debian's mariadbd on its
// host, supervised by the host's service manager, and the provider side of the mysql_client
// interface (interfaces/mysqlclient), answering as the MySQL charm does. See charmcraft.yaml.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/mysqlclient"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

// Paths and names on the database host.
const (
	serviceName = "mariadb"
	datadir     = "/var/lib/mysql"
	runDir      = "/run/mysqld"
	socket      = "/run/mysqld/mysqld.sock"
	port        = 3306
	stateName   = ".mariadb-test-charm-state.json"
	readyWait   = 60 * time.Second
)

// state is what the charm remembers: per relation, the user and its secret.
type state struct {
	charm.StatusCache
	Users map[juju.RelationID]user `json:"users,omitempty"`
}

type user struct {
	Name     string `json:"name"`
	Database string `json:"database"`
	SecretID string `json:"secret-id"`
}

type cfg struct {
	ShareCredentials *bool `json:"share-credentials"`
}

type mariadb struct {
	services service.Manager
	run      command.Exec
}

func main() {
	charm.Main(func(ev juju.Event) (juju.Handler, func(), error) {
		services := auto.Detect(os.LookupEnv)
		m := &mariadb{services: services, run: command.Exec{Timeout: time.Minute}}
		lc := charm.Lifecycle[state]{StateName: stateName}
		r := juju.NewRouter()
		for _, k := range []juju.Kind{juju.Install, juju.LeaderElected, juju.ConfigChanged, juju.Start, juju.UpgradeCharm} {
			r.Handle(k, lc.Handler(m.configure))
		}
		r.Handle(juju.UpdateStatus, lc.Handler(m.status))
		for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationBroken} {
			r.HandleRelation(mysqlclient.EndpointName, k, lc.Handler(m.relation))
		}
		return r.Dispatch, services.Close, nil
	})
}

// configure makes sure mariadbd runs (initialising the data directory first when empty) and
// answers every request.
func (m *mariadb) configure(ctx context.Context, h *charm.Hook[state]) error {
	if err := m.ensure(ctx, h); err != nil {
		return err
	}
	ids, err := h.Relations.IDs(ctx, mysqlclient.EndpointName)
	if err != nil {
		return err
	}
	leader, err := h.Leadership.IsLeader(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		req, err := mysqlclient.Provider{HookContext: h.HookContext}.Request(ctx, id)
		if err != nil || !leader {
			continue // not asked yet, or a bad request the relation hook reports
		}
		if err := m.answer(ctx, h, id, req); err != nil {
			return err
		}
	}
	return m.status(ctx, h)
}

// ensure starts mariadbd if it does not run.
func (m *mariadb) ensure(ctx context.Context, h *charm.Hook[state]) error {
	if st, err := m.services.Status(ctx, serviceName); err == nil && st.State == service.StateActive {
		return m.waitReady(ctx)
	}
	// Debian 14's mariadb-server leaves the data directory to systemd-tmpfiles: an image built
	// without a running systemd has none.
	for dir, mode := range map[string]os.FileMode{runDir: 0o755, datadir: 0o700} {
		if err := os.MkdirAll(dir, mode); err != nil {
			return fmt.Errorf("cannot create %s: %w", dir, err)
		}
	}
	out, err := m.run.Run(ctx, []string{"chown", "mysql:mysql", runDir, datadir}, nil)
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("chown: %s", strings.TrimSpace(string(out.Stderr)))
	}
	if err != nil {
		return fmt.Errorf("cannot give %s and %s to mysql: %w", runDir, datadir, err)
	}
	if _, err := os.Stat(filepath.Join(datadir, "mysql")); errors.Is(err, os.ErrNotExist) {
		_ = h.SetUnitStatus(ctx, juju.StatusMaintenance, "initialising "+datadir)
		out, err := m.run.Run(ctx, []string{"mariadb-install-db", "--no-defaults", "--user=mysql", "--datadir=" + datadir,
			"--auth-root-authentication-method=socket", "--skip-test-db", "--innodb-log-file-size=8M"}, nil)
		if err != nil || out.ExitCode != 0 {
			return fmt.Errorf("cannot initialise %s: %v %s", datadir, err, out.Stderr)
		}
	}
	addr, err := h.Network.IngressAddress(ctx, mysqlclient.EndpointName)
	if err != nil {
		return err
	}
	spec := service.Spec{Name: serviceName, Summary: "MariaDB (test database)", Command: []string{
		"/usr/sbin/mariadbd", "--no-defaults", "--user=mysql", "--datadir=" + datadir, "--socket=" + socket,
		"--pid-file=" + runDir + "/mysqld.pid", "--bind-address=" + addr, fmt.Sprintf("--port=%d", port),
		"--skip-name-resolve", "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=64M",
		"--innodb-lock-wait-timeout=900", "--loose-innodb-snapshot-isolation=OFF",
	}}
	if err := m.services.Configure(ctx, spec); err != nil {
		return err
	}
	if err := m.services.Enable(ctx, serviceName); err != nil {
		return err
	}
	_ = h.SetUnitStatus(ctx, juju.StatusMaintenance, "starting mariadbd")
	if err := m.services.Start(ctx, serviceName); err != nil {
		return err
	}
	return m.waitReady(ctx)
}

// sql runs statements as root over the local socket, the statements on stdin (no password
// on any command line).
func (m *mariadb) sql(ctx context.Context, stmts string) (string, error) {
	out, err := m.run.RunInput(ctx, []string{"mariadb", "--no-defaults", "--socket=" + socket, "-u", "root", "-N", "-B"}, nil, []byte(stmts))
	if err != nil {
		return "", err
	}
	if out.ExitCode != 0 {
		return "", fmt.Errorf("mariadb: %s", strings.TrimSpace(string(out.Stderr)))
	}
	return strings.TrimSpace(string(out.Stdout)), nil
}

func (m *mariadb) waitReady(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	var last error
	err := poll.Until(wctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, last = m.sql(ctx, "SELECT 1")
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("mariadbd does not answer: %w", errors.Join(last, err))
	}
	return nil
}

// relation answers a request, or drops the user of a relation that is gone.
func (m *mariadb) relation(ctx context.Context, h *charm.Hook[state]) error {
	ev, err := mysqlclient.Provider{HookContext: h.HookContext}.Event(ctx)
	var de *mysqlclient.DataError
	if errors.As(err, &de) {
		return h.SetUnitStatus(ctx, juju.StatusBlocked, err.Error())
	}
	if err != nil {
		return err
	}
	leader, err := h.Leadership.IsLeader(ctx)
	if err != nil || !leader {
		return err
	}
	switch ev := ev.(type) {
	case mysqlclient.DatabaseRequested:
		if err := m.ensure(ctx, h); err != nil {
			return err
		}
		if err := m.answer(ctx, h, ev.Relation, ev.Request); err != nil {
			return err
		}
	case mysqlclient.RequirerGone:
		if u, ok := h.State.Users[ev.Relation]; ok {
			if _, err := m.sql(ctx, fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%';", u.Name)); err != nil {
				return err
			}
			if err := h.Secrets.Remove(ctx, juju.SecretID(u.SecretID), 0); err != nil {
				h.Logf(ctx, juju.LevelWarning, "cannot remove secret %s: %v", u.SecretID, err)
			}
			delete(h.State.Users, ev.Relation)
		}
	}
	return m.status(ctx, h)
}

// answer creates the database and the relation's user (once), shares the credentials in a
// secret granted to the relation and publishes the response.
func (m *mariadb) answer(ctx context.Context, h *charm.Hook[state], id juju.RelationID, req mysqlclient.Request) error {
	var c cfg
	if err := h.Config.Decode(ctx, &c); err != nil {
		return err
	}
	u, ok := h.State.Users[id]
	if !ok || u.Database != req.Database {
		pass, err := password()
		if err != nil {
			return err
		}
		_, num, err := id.Parse()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("relation-%d", num)
		stmts := fmt.Sprintf("CREATE DATABASE IF NOT EXISTS `%s`;\nCREATE OR REPLACE USER '%s'@'%%' IDENTIFIED BY '%s';\nGRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'%%';\n",
			req.Database, name, pass, req.Database, name)
		if _, err := m.sql(ctx, stmts); err != nil {
			return fmt.Errorf("cannot create database %s for %s: %w", req.Database, id, err)
		}
		creds := mysqlclient.Credentials{Username: name, Password: mysqlclient.Password(pass)}
		sid, err := h.Secrets.Add(ctx, creds.Content(), juju.SecretAddOptions{Label: fmt.Sprintf("database.%d.user", num)})
		if err != nil {
			return err
		}
		if err := h.Secrets.Grant(ctx, sid, id, ""); err != nil {
			return err
		}
		u = user{Name: name, Database: req.Database, SecretID: string(sid)}
		if h.State.Users == nil {
			h.State.Users = map[juju.RelationID]user{}
		}
		h.State.Users[id] = u
		h.Logf(ctx, juju.LevelInfo, "created database %s and user %s for %s", req.Database, name, id)
	}
	addr, err := h.Network.IngressAddress(ctx, mysqlclient.EndpointName)
	if err != nil {
		return err
	}
	version, err := m.sql(ctx, "SELECT VERSION()")
	if err != nil {
		return err
	}
	resp := mysqlclient.Response{Database: u.Database, Endpoints: []mysqlclient.Endpoint{{Host: addr, Port: port}}, Version: version, UserSecretID: u.SecretID}
	if c.ShareCredentials != nil && !*c.ShareCredentials {
		// A broken provider: the answer without its credentials.
		return h.Relations.SetAppData(ctx, id, map[string]string{
			mysqlclient.KeyDatabase: u.Database, mysqlclient.KeyEndpoints: resp.Endpoints[0].String(), mysqlclient.KeySecretUser: "",
		})
	}
	return mysqlclient.Provider{HookContext: h.HookContext}.Publish(ctx, id, resp)
}

// password is 32 random letters and digits.
func password() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 32)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", err
		}
		b[i] = alphabet[n.Int64()]
	}
	return string(b), nil
}

// status reports whether mariadbd runs, without restarting it (tests stop it on purpose).
func (m *mariadb) status(ctx context.Context, h *charm.Hook[state]) error {
	if st, err := m.services.Status(ctx, serviceName); err != nil || st.State != service.StateActive {
		return h.SetUnitStatus(ctx, juju.StatusMaintenance, "mariadbd is not running")
	}
	version, err := m.sql(ctx, "SELECT VERSION()")
	if err != nil {
		return h.SetUnitStatus(ctx, juju.StatusMaintenance, "mariadbd does not answer: "+err.Error())
	}
	return h.SetUnitStatus(ctx, juju.StatusActive, fmt.Sprintf("mariadb %s serving %d users", version, len(h.State.Users)))
}
