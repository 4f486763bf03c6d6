package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
)

// Endpoint is an sftp share: an sftp-server listening on Host:Port, serving Path.
type Endpoint struct {
	Host string
	Port int
	Path string
}

func (e Endpoint) String() string {
	return "sftp://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) + e.Path
}

// ParseEndpoint reads sftp://HOST:PORT/PATH: a host name or IPv4 address (sshfs's HOST:PATH
// argument cannot carry an IPv6 one), a port, and an absolute clean path with the mountpoint's
// rules (no comma, whitespace or control character). Nothing else: no user, query or fragment.
func ParseEndpoint(s string) (Endpoint, error) {
	if len(s) > 1024 {
		return Endpoint{}, fmt.Errorf("endpoint longer than 1024 bytes")
	}
	u, err := url.Parse(s)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%q is not sftp://HOST:PORT/PATH: %w", s, err)
	}
	if u.Scheme != "sftp" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || u.ForceQuery {
		return Endpoint{}, fmt.Errorf("%q is not sftp://HOST:PORT/PATH", s)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" || port == "" {
		return Endpoint{}, fmt.Errorf("%q names no host and port", s)
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return Endpoint{}, fmt.Errorf("%q: an IPv6 host is not supported", s)
	}
	for _, r := range host {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return Endpoint{}, fmt.Errorf("%q: %q is not a host name or IPv4 address", s, host)
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return Endpoint{}, fmt.Errorf("%q: bad port %q", s, port)
	}
	if u.RawPath != "" {
		return Endpoint{}, fmt.Errorf("%q: escaped characters in the path", s)
	}
	if err := mountinfo.CheckMountpoint(u.Path); err != nil {
		return Endpoint{}, fmt.Errorf("%q: path: %w", s, err)
	}
	return Endpoint{Host: host, Port: n, Path: u.Path}, nil
}

// isMounted reports whether a filesystem is mounted at mountpoint, from a mount table in
// /proc/self/mountinfo's format.
func isMounted(table, mountpoint string) (bool, error) {
	data, err := os.ReadFile(table)
	if err != nil {
		return false, fmt.Errorf("cannot read the mount table: %w", err)
	}
	return mountedIn(data, mountpoint), nil
}

// mountedIn reports whether mountinfo (proc(5)) lists a mount at mountpoint; its fifth field,
// octal-escaped.
func mountedIn(mountinfo []byte, mountpoint string) bool {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 5 && unescapeOctal(f[4]) == mountpoint {
			return true
		}
	}
	return false
}

// unescapeOctal undoes the kernel's \ooo escapes of space, tab, newline and backslash.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
