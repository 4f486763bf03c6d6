package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/charmed-slurm/operators/interfaces/mysqlclient"
	"github.com/charmed-slurm/operators/libs/juju"
)

// Target is where slurmdbd stores: the provider's primary endpoint, the database and the
// user. Its Credentials never print the password.
type Target struct {
	Endpoint    mysqlclient.Endpoint
	Database    string
	Credentials mysqlclient.Credentials
	// Version is the server version the provider reported ("" when none).
	Version string
}

// String names the target without the password.
func (t Target) String() string {
	return fmt.Sprintf("%s/%s as %s", t.Endpoint, t.Database, t.Credentials.Username)
}

// DBInfo is what a probe learnt of the database.
type DBInfo struct {
	// Version is the server's (SELECT VERSION()).
	Version string
	// SnapshotIsolation is innodb_snapshot_isolation (MariaDB 11.6 and later; false where
	// the variable does not exist).
	SnapshotIsolation bool
}

// DBProblem is what keeps slurmdbd from its database.
type DBProblem string

const (
	// DBUnreachable: no connection to the endpoint.
	DBUnreachable DBProblem = "unreachable"
	// DBCredentials: the server refuses the user or password.
	DBCredentials DBProblem = "credentials"
	// DBMissing: the database does not exist.
	DBMissing DBProblem = "missing database"
	// DBOther: any other failure.
	DBOther DBProblem = "other"
)

// DBError is a probe's failure, classified.
type DBError struct {
	Problem DBProblem
	Err     error
}

func (e *DBError) Error() string { return e.Err.Error() }
func (e *DBError) Unwrap() error { return e.Err }

// Prober checks that slurmdbd can use a database.
type Prober interface {
	Probe(ctx context.Context, t Target) (DBInfo, error)
}

// SQLProber probes with a MySQL protocol client (go-sql-driver/mysql): one connection to the
// target, SELECT VERSION() and innodb_snapshot_isolation. It logs nothing.
type SQLProber struct {
	// Timeout bounds the connection and each query; zero means DefaultProbeTimeout.
	Timeout time.Duration
}

type noLogger struct{}

func (noLogger) Print(...any) {}

// Probe connects as t's user to t's database and reads what slurmdbd depends on.
func (p SQLProber) Probe(ctx context.Context, t Target) (DBInfo, error) {
	timeout := p.Timeout
	if timeout == 0 {
		timeout = DefaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = t.Credentials.Username, t.Credentials.Password.Reveal()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", t.Endpoint.String(), t.Database
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = timeout, timeout, timeout
	cfg.Logger = noLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return DBInfo{}, &DBError{Problem: DBOther, Err: err}
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(1)
	var info DBInfo
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&info.Version); err != nil {
		return DBInfo{}, classify(err)
	}
	var name, value string
	err = db.QueryRowContext(ctx, "SHOW VARIABLES LIKE 'innodb_snapshot_isolation'").Scan(&name, &value)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return DBInfo{}, classify(err)
	default:
		info.SnapshotIsolation = strings.EqualFold(value, "ON")
	}
	return info, nil
}

// classify sorts a driver error by what the operator must fix.
func classify(err error) error {
	var me *mysql.MySQLError
	var ne net.Error
	switch {
	case errors.As(err, &me) && (me.Number == 1045 || me.Number == 1044 || me.Number == 1698):
		return &DBError{Problem: DBCredentials, Err: err}
	case errors.As(err, &me) && me.Number == 1049:
		return &DBError{Problem: DBMissing, Err: err}
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded), errors.Is(err, mysql.ErrInvalidConn):
		return &DBError{Problem: DBUnreachable, Err: err}
	}
	return &DBError{Problem: DBOther, Err: err}
}

// database returns where slurmdbd stores, or ok false with h.problem or h.waiting set. The
// leader writes its request on the relation first when it has not yet.
func (h *hook) database(ctx context.Context) (Target, bool, error) {
	req := mysqlclient.Requirer{HookContext: h.hc, Database: DatabaseName}
	id, err := h.relation(ctx, mysqlclient.EndpointName)
	if err != nil {
		return Target{}, false, err
	}
	if id == "" {
		h.problem = "needs a database: integrate with a mysql_client provider (juju integrate slurmdbd mysql)"
		h.st.Requested = ""
		return Target{}, false, nil
	}
	if h.st.Requested != id {
		if err := req.Request(ctx, id); err != nil {
			return Target{}, false, fmt.Errorf("cannot ask for database %s: %w", DatabaseName, err)
		}
		h.st.Requested = id
		h.logf(ctx, juju.LevelInfo, "asked for database %s on %s", DatabaseName, id)
	}
	resp, err := req.Response(ctx, id)
	var de *mysqlclient.DataError
	switch {
	case errors.Is(err, mysqlclient.ErrNotReady):
		h.waiting = "waiting for the database provider to create " + DatabaseName
		return Target{}, false, nil
	case errors.As(err, &de):
		h.problem = "database relation: " + err.Error()
		return Target{}, false, nil
	case err != nil:
		return Target{}, false, err
	}
	creds, err := req.Credentials(ctx, resp)
	if errors.As(err, &de) {
		h.problem = "database relation: " + err.Error()
		return Target{}, false, nil
	} else if err != nil {
		return Target{}, false, err
	}
	return Target{Endpoint: resp.Endpoints[0], Database: resp.Database, Credentials: creds, Version: resp.Version}, true, nil
}

// probe checks the database and says in h.problem what is wrong with it. It returns the
// server's version when the database is usable.
func (h *hook) probe(ctx context.Context, t Target) (DBInfo, bool) {
	info, err := h.c.Database.Probe(ctx, t)
	var dbe *DBError
	if err != nil && !errors.As(err, &dbe) {
		dbe = &DBError{Problem: DBOther, Err: err}
	}
	switch {
	case err == nil && info.SnapshotIsolation:
		h.problem = fmt.Sprintf("the database at %s runs with innodb_snapshot_isolation=ON, which makes slurmdbd fail on write conflicts: set it OFF", t.Endpoint)
	case err == nil:
		return info, true
	case dbe.Problem == DBUnreachable:
		h.problem = fmt.Sprintf("cannot reach the database at %s: %v", t.Endpoint, dbe.Err)
	case dbe.Problem == DBCredentials:
		h.problem = fmt.Sprintf("the database at %s refuses the credentials of user %s: %v", t.Endpoint, t.Credentials.Username, dbe.Err)
	case dbe.Problem == DBMissing:
		h.problem = fmt.Sprintf("database %s does not exist at %s", t.Database, t.Endpoint)
	default:
		h.problem = fmt.Sprintf("cannot use the database at %s: %v", t.Endpoint, dbe.Err)
	}
	return DBInfo{}, false
}

// relation returns this unit's relation on endpoint ep, or "" when there is none. On a
// relation-broken hook of that endpoint the dying relation does not count.
func (h *hook) relation(ctx context.Context, ep string) (juju.RelationID, error) {
	ids, err := h.hc.Relations.IDs(ctx, ep)
	if err != nil {
		return "", fmt.Errorf("cannot list %s relations: %w", ep, err)
	}
	ev := h.hc.Event
	for _, id := range ids {
		if ev.Kind == juju.RelationBroken && ev.Relation == id {
			continue
		}
		return id, nil
	}
	return "", nil
}
