package hosts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
)

// CopyExecutable copies the executable src to a new file dst with mode, through cp, so that
// dst can be run at once. A file this process opens for writing cannot be executed while any
// process still holds it open for writing, and a child forked meanwhile by another goroutine
// keeps a copy of the descriptor until its own exec (golang/go#22315): a program started at
// that moment fails with "text file busy" (about 1 run in 20 here, with goroutines forking all
// the time as the local model's agents do). Only cp ever opens dst for writing, and cp has
// exited when this returns.
func CopyExecutable(src, dst string, mode fs.FileMode) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("cannot copy %s: %s exists", src, dst)
	}
	if out, err := exec.Command("cp", "--no-preserve=all", "--", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("cannot copy %s: %v: %s", src, err, out)
	}
	return os.Chmod(dst, mode)
}

// WriteExecutable writes data to the executable path with mode, replacing it, so that it can
// be run at once (see CopyExecutable): data goes to a file beside it, which cp copies.
func WriteExecutable(path string, data []byte, mode fs.FileMode) error {
	tmp := path + ".new"
	os.Remove(tmp)
	defer os.Remove(tmp)
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return CopyExecutable(tmp, path, mode)
}
