package service_test

import (
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/service"
)

func TestUserIDs(t *testing.T) {
	uid, gid, err := service.UserIDs("root")
	if err != nil || uid != 0 || gid != 0 {
		t.Errorf("UserIDs(root) = %d, %d, %v; want 0, 0, nil", uid, gid, err)
	}
	if _, _, err := service.UserIDs("no-such-user-here"); err == nil || !strings.Contains(err.Error(), `"no-such-user-here"`) {
		t.Errorf("unknown user: got %v, want an error naming it", err)
	}
}
