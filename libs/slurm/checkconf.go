package slurm

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// CheckConfigTimeout bounds CheckConfig: Slurm's parser waits up to 60 s for an included file
// that does not exist, which a candidate configuration must not make a hook do.
const CheckConfigTimeout = 15 * time.Second

// ConfigError is a slurm.conf (with its includes) that Slurm's own parser refuses.
type ConfigError struct {
	// Conf is the slurm.conf that was read.
	Conf string
	// Key is the key Slurm names in its first error, when it names one ("MaxTime").
	Key string
	// Value is the value Slurm names with Key, when it does.
	Value string
	// File is the file Slurm names in a parse error, when it names one.
	File string
	// Messages are Slurm's error lines, without the "scontrol: error: " prefix.
	Messages []string
}

func (e *ConfigError) Error() string {
	if len(e.Messages) == 0 {
		return "Slurm refuses " + e.Conf
	}
	return "Slurm refuses the configuration: " + strings.Join(e.Messages, "; ")
}

// Refusal says in one status line what who ("Slurm", "slurmdbd") refused: the key and value
// the parser names, then its first message.
func (e *ConfigError) Refusal(who string) string {
	msg := who + " cannot read the configuration"
	if len(e.Messages) > 0 {
		msg = e.Messages[0]
	}
	switch {
	case e.Key == "":
		return who + " refuses it: " + msg
	case e.Value == "":
		return fmt.Sprintf("%s refuses %s: %s", who, e.Key, msg)
	}
	return fmt.Sprintf("%s refuses %s=%s: %s", who, e.Key, e.Value, msg)
}

// confForms are the patterns of Slurm's parser's refusals.
type confForms struct {
	errorLine *regexp.Regexp
	// keyForms: Slurm 22.05's parser names the bad key in one of these forms.
	keyForms []*regexp.Regexp
	fileForm *regexp.Regexp
}

// confPatterns compiles confForms on the first refusal, not at every hook's start.
var confPatterns = sync.OnceValue(func() *confForms {
	return &confForms{
		errorLine: regexp.MustCompile(`(?m)^\S+: (?:error|fatal): (.*)$`),
		keyForms: []*regexp.Regexp{
			regexp.MustCompile(`^Bad value "(.*)" for (\w+)`),
			regexp.MustCompile(`^Bad value for (\w+): (.*)$`),
			regexp.MustCompile(`^(\w+) value \(?"?(.*?)"?\)? is (?:not a valid number|less than zero|out of range|greater than \d+)`),
			regexp.MustCompile(`^"(.*)" is not a valid option for "(\w+)"`),
			regexp.MustCompile(`^(?:\w+: )?Parsing error at unrecognized key: (\w+)`),
		},
		fileForm: regexp.MustCompile(`(?:in file|failed in file) (\S+) line \d+`),
	}
})

// CheckConfig makes Slurm's own parser read conf (a slurm.conf and the files it includes)
// without contacting any daemon: `scontrol show hostnames` loads the configuration before it
// does anything else and exits non-zero when the parser refuses it. It returns a *ConfigError
// naming the key Slurm complains about, or nil when Slurm reads the file. conf must be an
// absolute path; relative Include lines are read beside it.
func (c *Client) CheckConfig(ctx context.Context, conf string) error {
	if c.Runner == nil {
		return fmt.Errorf("slurm client has no Runner")
	}
	ctx, cancel := context.WithTimeout(ctx, CheckConfigTimeout)
	defer cancel()
	argv := []string{"scontrol", "show", "hostnames", "x"}
	env := append(append([]string(nil), c.Env...), "SLURM_CONF="+conf)
	out, err := c.Runner.Run(ctx, argv, env)
	if err != nil {
		return fmt.Errorf("cannot check %s with Slurm's parser: %w", conf, err)
	}
	if out.ExitCode == 0 {
		return nil
	}
	return parseConfigError(conf, string(out.Stderr)+string(out.Stdout))
}

func parseConfigError(conf, text string) *ConfigError {
	e := &ConfigError{Conf: conf}
	forms := confPatterns()
	for _, m := range forms.errorLine.FindAllStringSubmatch(text, -1) {
		msg := m[1]
		if msg == "Unable to process configuration file" {
			continue
		}
		e.Messages = append(e.Messages, msg)
		if e.File == "" {
			if f := forms.fileForm.FindStringSubmatch(msg); f != nil {
				e.File = f[1]
			}
		}
		if e.Key != "" {
			continue
		}
		for i, re := range forms.keyForms {
			f := re.FindStringSubmatch(msg)
			if f == nil {
				continue
			}
			switch i {
			case 0, 3:
				e.Value, e.Key = f[1], f[2]
			case 1, 2:
				e.Key, e.Value = f[1], f[2]
			default:
				e.Key = f[1]
			}
			break
		}
	}
	if len(e.Messages) == 0 && strings.TrimSpace(text) != "" {
		e.Messages = []string{strings.TrimSpace(text)}
	}
	return e
}

// CheckDbdConfig makes slurmdbd's own parser read dir/slurmdbd.conf without starting the
// daemon, and returns slurmdbd's version. slurmdbd reads slurmdbd.conf from the directory of
// SLURM_CONF, and reads it before its command line: `slurmdbd -V` with SLURM_CONF in dir exits
// non-zero when the parser refuses the file (an unknown key, a bad value, a mode other than
// 0600 or 0640, an owner other than its SlurmUser) and prints the version when it reads it.
// A refusal is a *ConfigError naming the key Slurm complains about.
func (c *Client) CheckDbdConfig(ctx context.Context, dir string) (Version, error) {
	if c.Runner == nil {
		return Version{}, fmt.Errorf("slurm client has no Runner")
	}
	ctx, cancel := context.WithTimeout(ctx, CheckConfigTimeout)
	defer cancel()
	conf := filepath.Join(dir, "slurmdbd.conf")
	env := append(append([]string(nil), c.Env...), "SLURM_CONF="+filepath.Join(dir, "slurm.conf"))
	out, err := c.Runner.Run(ctx, []string{"slurmdbd", "-V"}, env)
	if err != nil {
		return Version{}, fmt.Errorf("cannot check %s with slurmdbd's parser: %w", conf, err)
	}
	if out.ExitCode != 0 {
		return Version{}, parseConfigError(conf, string(out.Stderr)+string(out.Stdout))
	}
	v, err := ParseVersion(strings.TrimSpace(string(out.Stdout)))
	if err != nil {
		return Version{}, fmt.Errorf("cannot read slurmdbd's version: %w", err)
	}
	return v, nil
}
