package gres_test

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/gres"
)

func TestParseDeclaration(t *testing.T) {
	t.Parallel()
	tests := []parseCase[gres.Set]{
		{name: "empty", in: ""},
		{name: "blank entries", in: " ; \n;"},
		{name: "files give the count", in: "Name=fpga Type=u250 File=/dev/xclmgmt[0-1]",
			want: gres.Set{{Name: "fpga", Type: "u250", Count: 2, Files: []string{"/dev/xclmgmt0", "/dev/xclmgmt1"}}}},
		{name: "count only", in: "Name=bandwidth Count=20G", want: gres.Set{{Name: "bandwidth", Count: 20 << 30}}},
		{name: "keys any case, several entries", in: "name=nic file=/dev/infiniband/uverbs0,/dev/infiniband/uverbs1;\nNAME=gpu TYPE=mi100 FILE=/dev/dri/renderD128 COUNT=1",
			want: gres.Set{
				{Name: "nic", Count: 2, Files: []string{"/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1"}},
				{Name: "gpu", Type: "mi100", Count: 1, Files: []string{"/dev/dri/renderD128"}},
			}},
		{name: "count matches files", in: "Name=fpga Count=2 File=/dev/f[0-1]", want: gres.Set{{Name: "fpga", Count: 2, Files: []string{"/dev/f0", "/dev/f1"}}}},
		{name: "count differs from files", in: "Name=fpga Count=3 File=/dev/f[0-1]", err: "count 3 but 2 files"},
		{name: "no name", in: "Type=x Count=1", err: "Name is required"},
		{name: "no count or file", in: "Name=nic", err: "Count or File is required"},
		{name: "gpu needs files", in: "Name=gpu Count=2", err: "needs a device file"},
		{name: "node name refused", in: "NodeName=x Name=nic Count=1", err: "NodeName is set by the charm"},
		{name: "autodetect refused", in: "AutoDetect=nvml", err: "AutoDetect is not supported"},
		{name: "unknown key", in: "Name=nic Count=1 Cores=0-1", err: "unknown key Cores"},
		{name: "repeated key", in: "Name=nic Name=fpga Count=1", err: "Name given twice"},
		{name: "not key=value", in: "Name=nic 2", err: `"2" is not key=value`},
		{name: "empty value", in: "Name= Count=1", err: "is not key=value"},
		{name: "bad range", in: "Name=fpga File=/dev/f[1-", err: "invalid File"},
		{name: "bad name", in: "Name=Fpga Count=1", err: "invalid name"},
		{name: "same resource twice", in: "Name=nic Count=1; Name=nic Count=2", err: "nic listed twice"},
		{name: "relative file", in: "Name=fpga File=fpga0", err: "invalid file"},
	}
	runParseCases(t, "gres.ParseDeclaration", gres.ParseDeclaration, tests)
}
