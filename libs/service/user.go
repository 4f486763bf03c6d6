package service

import (
	"fmt"
	"os/user"
	"strconv"
)

// UserIDs returns the numeric uid and gid of a system user (munge, slurm), for the files a
// service reads as that user.
func UserIDs(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot find user %q: %w", name, err)
	}
	uid, err = strconv.Atoi(u.Uid)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot find user %q: non-numeric uid %q", name, u.Uid)
	}
	gid, err = strconv.Atoi(u.Gid)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot find user %q: non-numeric gid %q", name, u.Gid)
	}
	return uid, gid, nil
}
