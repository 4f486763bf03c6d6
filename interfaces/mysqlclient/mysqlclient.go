// Package mysqlclient is the data platform's `mysql_client` relation interface (the
// `database` relation the MySQL charm provides), as canonical/data-platform-libs's
// data_interfaces library speaks it in its current (v0) protocol, both sides in Go: the
// requirer names the database it wants, the provider creates it with a user for the
// relation and answers with its endpoints and the user's credentials in a Juju secret.
//
// Each side writes its application databag, and only its leader does:
//
//   - the requirer writes "database" (the database to create) and "requested-secrets" (a JSON
//     list of the response fields the provider must put in secrets instead of the databag:
//     username, password, tls, tls-ca, uris, read-only-uris);
//   - the provider answers with "database" (the name again, once created), "endpoints"
//     (host:port, comma separated, primary first), optionally "read-only-endpoints" and
//     "version" (the server's), and "secret-user": the id of a secret it owns and grants to
//     the relation, whose content is {"username", "password"}.
//
// No version key: the protocol is the library's v0, which a v1 provider also answers (it
// reads a requirer bag without "version" as v0). Decoding is strict all the same: a malformed
// endpoint, a database name that is not the one asked for, a secret without a username or
// password, or a provider that puts the password in plain relation data (a legacy answer to
// a requirer that asked for no secrets) gives a *DataError naming the field; an answer not
// given yet is ErrNotReady. A Password never prints its value (%v, %s, %#v, JSON): it is
// safe in errors and logs.
package mysqlclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Databag keys.
const (
	KeyDatabase          = "database"
	KeyRequestedSecrets  = "requested-secrets"
	KeyEndpoints         = "endpoints"
	KeyReadOnlyEndpoints = "read-only-endpoints"
	KeyVersion           = "version"
	KeySecretUser        = "secret-user"
	// KeyUsername and KeyPassword are where a legacy provider puts the credentials in the
	// databag itself; KeyURIs embeds the password too.
	KeyUsername = "username"
	KeyPassword = "password"
	KeyURIs     = "uris"
)

// Secret content keys of the user secret.
const (
	SecretUsername = "username"
	SecretPassword = "password"
)

// RequestedSecrets are the fields the requirer asks the provider to keep in secrets: every
// field that carries a credential (the library's own list, without the entity fields this
// requirer never asks for).
var RequestedSecrets = []string{"username", "password", "tls", "tls-ca", "uris", "read-only-uris"}

// ErrNotReady reports that the other side has not written its part yet. It is not a fault:
// wait for the next hook.
var ErrNotReady = errors.New("database relation data not ready")

// DataError reports relation data that cannot be decoded. Field names the databag key (or
// the secret's content key).
type DataError struct {
	Field string
	Msg   string
	Err   error
}

func (e *DataError) Error() string {
	msg := fmt.Sprintf("invalid %q in database relation data: %s", e.Field, e.Msg)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *DataError) Unwrap() error { return e.Err }

// MaxNameLen is MySQL's (and MariaDB's) limit on a database or user name.
const MaxNameLen = 64

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// CheckDatabaseName accepts names that need no quoting in SQL: letters, digits and '_', at
// most MaxNameLen characters.
func CheckDatabaseName(name string) error {
	if name == "" {
		return errors.New("empty database name")
	}
	if len(name) > MaxNameLen || !nameRE.MatchString(name) {
		return fmt.Errorf("%q is not a database name (letters, digits and '_', at most %d characters)", name, MaxNameLen)
	}
	return nil
}

// Request is what the requirer asks for.
type Request struct {
	// Database is the database to create (the same name is asked again on every relation).
	Database string
}

// Encode renders the requirer's databag.
func (r Request) Encode() (map[string]string, error) {
	if err := CheckDatabaseName(r.Database); err != nil {
		return nil, &DataError{Field: KeyDatabase, Msg: err.Error()}
	}
	secrets, err := json.Marshal(RequestedSecrets)
	if err != nil {
		return nil, err
	}
	return map[string]string{KeyDatabase: r.Database, KeyRequestedSecrets: string(secrets)}, nil
}

// DecodeRequest reads the requirer's databag. An empty bag is ErrNotReady. A requirer that did
// not ask for its username and password in a secret is refused: the provider would have to put
// the password in relation data.
func DecodeRequest(bag map[string]string) (Request, error) {
	if len(bag) == 0 {
		return Request{}, ErrNotReady
	}
	name, ok := bag[KeyDatabase]
	if !ok {
		return Request{}, ErrNotReady
	}
	if err := CheckDatabaseName(name); err != nil {
		return Request{}, &DataError{Field: KeyDatabase, Msg: err.Error()}
	}
	raw, ok := bag[KeyRequestedSecrets]
	if !ok {
		return Request{}, &DataError{Field: KeyRequestedSecrets, Msg: "missing: the requirer asks for no secrets, so its password would travel in relation data"}
	}
	var asked []string
	if err := json.Unmarshal([]byte(raw), &asked); err != nil {
		return Request{}, &DataError{Field: KeyRequestedSecrets, Msg: "not a JSON list of strings", Err: err}
	}
	for _, f := range []string{SecretUsername, SecretPassword} {
		if !slices.Contains(asked, f) {
			return Request{}, &DataError{Field: KeyRequestedSecrets, Msg: fmt.Sprintf("%q is not asked for in a secret", f)}
		}
	}
	return Request{Database: name}, nil
}

// Endpoint is one database server address.
type Endpoint struct {
	Host string
	Port int
}

func (e Endpoint) String() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// maxEndpoints bounds an endpoint list (a cluster has a handful of members).
const maxEndpoints = 64

// ParseEndpoints reads a comma separated list of host:port (an IPv6 host in brackets). Unix
// socket endpoints (file://, which a local mysql-router gives) are refused: this package
// speaks TCP only.
func ParseEndpoints(s string) ([]Endpoint, error) {
	var eps []Endpoint
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.HasPrefix(f, "file://") {
			return nil, fmt.Errorf("%q is a unix socket: only host:port endpoints are supported", f)
		}
		host, port, err := net.SplitHostPort(f)
		if err != nil || host == "" || strings.ContainsAny(host, " /\\") {
			return nil, fmt.Errorf("%q is not host:port", f)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("%q has an invalid port", f)
		}
		eps = append(eps, Endpoint{Host: host, Port: n})
		if len(eps) > maxEndpoints {
			return nil, fmt.Errorf("more than %d endpoints", maxEndpoints)
		}
	}
	if len(eps) == 0 {
		return nil, errors.New("no endpoint")
	}
	return eps, nil
}

func joinEndpoints(eps []Endpoint) string {
	s := make([]string, len(eps))
	for i, e := range eps {
		s[i] = e.String()
	}
	return strings.Join(s, ",")
}

// Response is the provider's answer, without the credentials (they stay in the secret).
type Response struct {
	// Database is the database created for the requirer.
	Database string
	// Endpoints are the read-write servers, primary first.
	Endpoints []Endpoint
	// ReadOnlyEndpoints are replicas, if any.
	ReadOnlyEndpoints []Endpoint
	// Version is the server's version as the provider reports it ("" when not given).
	Version string
	// UserSecretID is the secret holding the username and password.
	UserSecretID string
}

// maxVersionLen bounds the version string.
const maxVersionLen = 128

// Encode renders the provider's databag.
func (r Response) Encode() (map[string]string, error) {
	if err := CheckDatabaseName(r.Database); err != nil {
		return nil, &DataError{Field: KeyDatabase, Msg: err.Error()}
	}
	if len(r.Endpoints) == 0 {
		return nil, &DataError{Field: KeyEndpoints, Msg: "empty"}
	}
	if r.UserSecretID == "" {
		return nil, &DataError{Field: KeySecretUser, Msg: "empty"}
	}
	bag := map[string]string{
		KeyDatabase:   r.Database,
		KeyEndpoints:  joinEndpoints(r.Endpoints),
		KeySecretUser: r.UserSecretID,
	}
	if len(r.ReadOnlyEndpoints) > 0 {
		bag[KeyReadOnlyEndpoints] = joinEndpoints(r.ReadOnlyEndpoints)
	}
	if r.Version != "" {
		bag[KeyVersion] = r.Version
	}
	for k, v := range bag {
		if _, err := decodeField(k, v); err != nil {
			return nil, err
		}
	}
	return bag, nil
}

// decodeField checks one response field.
func decodeField(key, v string) ([]Endpoint, error) {
	switch key {
	case KeyEndpoints, KeyReadOnlyEndpoints:
		eps, err := ParseEndpoints(v)
		if err != nil {
			return nil, &DataError{Field: key, Msg: err.Error()}
		}
		return eps, nil
	case KeyVersion:
		if len(v) > maxVersionLen || strings.ContainsAny(v, "\n\r\x00") {
			return nil, &DataError{Field: key, Msg: fmt.Sprintf("not a version: %q", truncate(v))}
		}
	case KeySecretUser:
		if !strings.HasPrefix(v, "secret:") || strings.ContainsAny(v, " \t\r\n") || len(v) > 256 {
			return nil, &DataError{Field: key, Msg: fmt.Sprintf("not a secret id: %q", truncate(v))}
		}
	}
	return nil, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// DecodeResponse reads the provider's databag for a request of database. It is ErrNotReady
// until the provider names the database it created. Credentials in plain relation data are
// refused, naming the field (the value is never echoed).
func DecodeResponse(database string, bag map[string]string) (Response, error) {
	for _, k := range []string{KeyPassword, KeyURIs} {
		if _, ok := bag[k]; ok {
			return Response{}, &DataError{Field: k, Msg: "the provider put a credential in plain relation data; credentials are taken only from a Juju secret (secret-user)"}
		}
	}
	name, ok := bag[KeyDatabase]
	if !ok {
		return Response{}, ErrNotReady
	}
	if name != database {
		return Response{}, &DataError{Field: KeyDatabase, Msg: fmt.Sprintf("the provider created %q, not the %q asked for", truncate(name), database)}
	}
	r := Response{Database: name}
	raw, ok := bag[KeyEndpoints]
	if !ok {
		return Response{}, &DataError{Field: KeyEndpoints, Msg: "missing"}
	}
	var err error
	if r.Endpoints, err = decodeField(KeyEndpoints, raw); err != nil {
		return Response{}, err
	}
	if raw, ok := bag[KeyReadOnlyEndpoints]; ok && raw != "" {
		if r.ReadOnlyEndpoints, err = decodeField(KeyReadOnlyEndpoints, raw); err != nil {
			return Response{}, err
		}
	}
	if v, ok := bag[KeyVersion]; ok {
		if _, err := decodeField(KeyVersion, v); err != nil {
			return Response{}, err
		}
		r.Version = v
	}
	id, ok := bag[KeySecretUser]
	if !ok {
		return Response{}, &DataError{Field: KeySecretUser, Msg: "missing: the provider shared no credentials"}
	}
	if _, err := decodeField(KeySecretUser, id); err != nil {
		return Response{}, err
	}
	r.UserSecretID = id
	return r, nil
}

// Password is a database password. It never prints its value.
type Password string

const redacted = "<redacted>"

func (Password) String() string   { return redacted }
func (Password) GoString() string { return redacted }

// MarshalJSON keeps the password out of JSON too.
func (Password) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// Reveal is the password itself, for the one place that must write it.
func (p Password) Reveal() string { return string(p) }

// Credentials are the user the provider created for the relation.
type Credentials struct {
	Username string
	Password Password
}

// maxCredentialLen bounds the username and password (MySQL's user names are at most 80
// characters; passwords have no fixed limit, 1 KiB is plenty).
const maxCredentialLen = 1024

// DecodeCredentials reads the user secret's content.
func DecodeCredentials(content map[string]string) (Credentials, error) {
	user, ok := content[SecretUsername]
	if !ok || user == "" {
		return Credentials{}, &DataError{Field: KeySecretUser, Msg: "the secret has no \"username\""}
	}
	if len(user) > 80 || strings.ContainsAny(user, "\x00\n\r\t '\"`\\") {
		return Credentials{}, &DataError{Field: KeySecretUser, Msg: fmt.Sprintf("the secret's username %q is not a user name", truncate(user))}
	}
	pass, ok := content[SecretPassword]
	if !ok || pass == "" {
		return Credentials{}, &DataError{Field: KeySecretUser, Msg: "the secret has no \"password\""}
	}
	if len(pass) > maxCredentialLen || strings.ContainsAny(pass, "\x00\n\r") {
		return Credentials{}, &DataError{Field: KeySecretUser, Msg: "the secret's password is over 1024 characters or holds a line break or NUL"}
	}
	return Credentials{Username: user, Password: Password(pass)}, nil
}

// Content renders the user secret's content.
func (c Credentials) Content() map[string]string {
	return map[string]string{SecretUsername: c.Username, SecretPassword: c.Password.Reveal()}
}
