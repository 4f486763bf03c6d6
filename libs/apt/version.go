package apt

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/command"
)

// Installed returns the version of package pkg that dpkg has installed ("22.05.8-4+deb12u3"),
// or "" when it is not installed (unknown to dpkg, or removed with its configuration files
// left). It runs `dpkg-query -W -f '${db:Status-Abbrev}|${Version}\n' pkg`.
func Installed(ctx context.Context, runner command.Runner, pkg string) (string, error) {
	if err := checkName(pkg); err != nil {
		return "", err
	}
	argv := []string{"dpkg-query", "-W", "-f", `${db:Status-Abbrev}|${Version}\n`, pkg}
	out, err := runner.Run(ctx, argv, nil)
	if err != nil {
		return "", fmt.Errorf("cannot ask dpkg about %s: %w", pkg, err)
	}
	if out.ExitCode != 0 {
		// dpkg-query exits 1 for a package it has never seen ("no packages found matching").
		if out.ExitCode == 1 && strings.Contains(string(out.Stderr), "no packages found") {
			return "", nil
		}
		return "", fmt.Errorf("cannot ask dpkg about %s: dpkg-query exited with %d: %s", pkg, out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	v, err := ParseInstalled(string(out.Stdout))
	if err != nil {
		return "", fmt.Errorf("cannot ask dpkg about %s: %w", pkg, err)
	}
	return v, nil
}

// ParseInstalled reads the output of Installed's dpkg-query: one line "<status>|<version>",
// where status is dpkg's three-letter abbreviation ("ii " installed, "rc " removed with its
// configuration files left). It returns the version of an installed package, else "".
func ParseInstalled(out string) (string, error) {
	line := strings.TrimRight(out, "\n")
	if strings.Contains(line, "\n") {
		return "", fmt.Errorf("unexpected dpkg-query output %q: more than one line", short(out))
	}
	status, version, ok := strings.Cut(line, "|")
	if !ok || len(status) < 2 {
		return "", fmt.Errorf("unexpected dpkg-query output %q: want <status>|<version>", short(out))
	}
	if status[1] != 'i' {
		return "", nil // not installed (the desired state does not matter)
	}
	if err := checkVersion(version); err != nil {
		return "", fmt.Errorf("unexpected dpkg-query output %q: %w", short(out), err)
	}
	return version, nil
}

// Candidate returns the version apt would install for package pkg, or "" when apt has none
// (an unknown package, or "Candidate: (none)"). It runs `apt-cache policy pkg` and reads the
// package lists as they are: run `apt-get update` first for fresh ones.
func Candidate(ctx context.Context, runner command.Runner, pkg string) (string, error) {
	if err := checkName(pkg); err != nil {
		return "", err
	}
	out, err := runner.Run(ctx, []string{"apt-cache", "policy", pkg}, []string{"LC_ALL=C"})
	if err != nil {
		return "", fmt.Errorf("cannot ask apt about %s: %w", pkg, err)
	}
	if out.ExitCode != 0 {
		return "", fmt.Errorf("cannot ask apt about %s: apt-cache exited with %d: %s", pkg, out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	v, err := ParseCandidate(string(out.Stdout))
	if err != nil {
		return "", fmt.Errorf("cannot ask apt about %s: %w", pkg, err)
	}
	return v, nil
}

// ParseCandidate reads the candidate version from `apt-cache policy <pkg>` (under LC_ALL=C):
// the "Candidate:" line of the package's entry; "" when there is no entry (apt prints
// nothing for a package it does not know) or the candidate is "(none)".
func ParseCandidate(out string) (string, error) {
	if strings.TrimSpace(out) == "" {
		return "", nil
	}
	var found string
	n := 0
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || k != "Candidate" {
			continue
		}
		n++
		found = strings.TrimSpace(v)
	}
	switch {
	case n == 0:
		return "", fmt.Errorf("unexpected apt-cache policy output %q: no Candidate line", short(out))
	case n > 1:
		return "", fmt.Errorf("unexpected apt-cache policy output %q: %d Candidate lines (one package expected)", short(out), n)
	case found == "(none)":
		return "", nil
	}
	if err := checkVersion(found); err != nil {
		return "", fmt.Errorf("unexpected apt-cache policy output %q: %w", short(out), err)
	}
	return found, nil
}

// checkName refuses what cannot be a Debian package name (policy 5.6.1: lower case letters,
// digits, '+', '-', '.', at least two characters, starting with a letter or digit).
func checkName(pkg string) error {
	ok := len(pkg) >= 2 && len(pkg) <= 128
	for i, r := range pkg {
		if !ok {
			break
		}
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		ok = alnum || i > 0 && (r == '+' || r == '-' || r == '.')
	}
	if !ok {
		return fmt.Errorf("invalid package name %q", short(pkg))
	}
	return nil
}

// checkVersion refuses what cannot be a Debian version (policy 5.6.12): empty, too long,
// spaces or control characters, or not starting with a digit once the epoch is removed.
func checkVersion(v string) error {
	if v == "" || len(v) > 128 {
		return fmt.Errorf("bad version %q", short(v))
	}
	for _, r := range v {
		if r <= ' ' || r > '~' {
			return fmt.Errorf("bad version %q", short(v))
		}
	}
	upstream := v
	if _, rest, ok := strings.Cut(v, ":"); ok {
		upstream = rest
	}
	if upstream == "" || upstream[0] < '0' || upstream[0] > '9' {
		return fmt.Errorf("bad version %q", short(v))
	}
	return nil
}

// short is s cut to 60 bytes, for messages.
func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
