package slurmconf_test

import (
	"errors"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/google/go-cmp/cmp"
)

func TestParseParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want slurmconf.Params
	}{
		{"partition config", "DefaultTime=45:00 MaxTime=1:00:00", slurmconf.Params{{Key: "DefaultTime", Value: "45:00"}, {Key: "MaxTime", Value: "1:00:00"}}},
		{"node config", "Weight=10 Features=a,b", slurmconf.Params{{Key: "Weight", Value: "10"}, {Key: "Features", Value: "a,b"}}},
		{"empty", "", nil},
		{"blank", "  \t ", nil},
		{"quoted", `Reason="a b" X=""`, slurmconf.Params{{Key: "Reason", Value: "a b"}, {Key: "X", Value: ""}}},
		{"hash in quotes", `Reason="ticket #1"`, slurmconf.Params{{Key: "Reason", Value: "ticket #1"}}},
		{"escapes", `Reason=a\#b\\c`, slurmconf.Params{{Key: "Reason", Value: `a#b\c`}}},
		{"equals in value", "SchedulerParameters=a=1,b=2", slurmconf.Params{{Key: "SchedulerParameters", Value: "a=1,b=2"}}},
		{"quote inside value", `X=a"b`, slurmconf.Params{{Key: "X", Value: `a"b`}}},
		{"odd spacing", "  A=1\t\tB=2  ", slurmconf.Params{{Key: "A", Value: "1"}, {Key: "B", Value: "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := slurmconf.ParseParams(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestParseErrors checks that every bad input gives a *ParseError naming the
// line, column and key.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parse func(string) error
		in    string
		want  slurmconf.ParseError
	}{
		{"unknown partition key", partition, "PartitionName=batch MaxTme=1:00:00", slurmconf.ParseError{Line: 1, Col: 21, Key: "MaxTme", Msg: `unknown partition key "MaxTme" (did you mean "MaxTime"?)`}},
		{"unknown node key", node, "NodeName=n1 Weigth=10", slurmconf.ParseError{Line: 1, Col: 13, Key: "Weigth", Msg: `unknown node key "Weigth" (did you mean "Weight"?)`}},
		{"unknown key far from any", node, "NodeName=n1 Colour=red", slurmconf.ParseError{Line: 1, Col: 13, Key: "Colour", Msg: `unknown node key "Colour"`}},
		{"22.05 has no PowerDownOnIdle", partition, "PartitionName=p PowerDownOnIdle=YES", slurmconf.ParseError{Line: 1, Col: 17, Key: "PowerDownOnIdle", Msg: `unknown partition key "PowerDownOnIdle"`}},
		{"nodeset key", nodeSet, "NodeSet=s Features=a", slurmconf.ParseError{Line: 1, Col: 11, Key: "Features", Msg: `unknown nodeset key "Features" (did you mean "Feature"?)`}},
		{"wrong first key", partition, "Nodes=a PartitionName=p", slurmconf.ParseError{Line: 1, Col: 1, Key: "Nodes", Msg: `a partition line must start with PartitionName=, not "Nodes"`}},
		{"empty line", nodeSet, "", slurmconf.ParseError{Line: 1, Key: "NodeSet", Msg: `empty nodeset line: it must start with NodeSet=`}},
		{"empty name", partition, `PartitionName="" Nodes=a`, slurmconf.ParseError{Line: 1, Col: 15, Key: "PartitionName", Msg: `empty value for "PartitionName": it needs a name`}},
		{"name with space", downNodes, `DownNodes="a b"`, slurmconf.ParseError{Line: 1, Col: 12, Key: "DownNodes", Msg: `invalid name "a b" for "DownNodes": names cannot contain white space, quotes, '#' or '\'`}},
		{"duplicate key", partition, "PartitionName=p MaxTime=1 maxtime=2", slurmconf.ParseError{Line: 1, Col: 27, Key: "maxtime", Msg: `duplicate key "maxtime" (first given at column 17)`}},
		{"duplicate name key", partition, "PartitionName=p PartitionName=q", slurmconf.ParseError{Line: 1, Col: 17, Key: "PartitionName", Msg: `key "PartitionName" is not allowed here: it names the partition`}},
		{"alias duplicate", node, "NodeName=n Procs=1 CPUs=2", slurmconf.ParseError{Line: 1, Col: 20, Key: "CPUs", Msg: `duplicate key "CPUs": it means the same as "Procs" given at column 12`}},
		{"duplicate in params", params, "A=1 a=2", slurmconf.ParseError{Line: 1, Col: 5, Key: "a", Msg: `duplicate key "a" (first given at column 1)`}},
		{"missing equals", params, "Weight=10 Features", slurmconf.ParseError{Line: 1, Col: 11, Key: "Features", Msg: `malformed key=value "Features": missing '=' after the key`}},
		{"space before equals", params, "Weight =10", slurmconf.ParseError{Line: 1, Col: 1, Key: "Weight", Msg: `malformed key=value "Weight": missing '=' after the key`}},
		{"missing key", params, "=10", slurmconf.ParseError{Line: 1, Col: 1, Msg: `malformed key=value: missing key before '='`}},
		{"bad key", params, "We-ight=10", slurmconf.ParseError{Line: 1, Col: 1, Key: "We-ight", Msg: `malformed key "We-ight": keys are letters, digits, '_' and '.'`}},
		{"empty value", params, "Weight= Features=a", slurmconf.ParseError{Line: 1, Col: 8, Key: "Weight", Msg: `empty value for key "Weight" (write Weight="" for an empty value)`}},
		{"empty value at end", params, "Weight=", slurmconf.ParseError{Line: 1, Col: 8, Key: "Weight", Msg: `empty value for key "Weight" (write Weight="" for an empty value)`}},
		{"unbalanced quotes", params, `Weight=10 Reason="a b`, slurmconf.ParseError{Line: 1, Col: 18, Key: "Reason", Msg: `unbalanced quotes in the value of "Reason"`}},
		{"text after quote", params, `Reason="a b"c`, slurmconf.ParseError{Line: 1, Col: 13, Key: "Reason", Msg: `unexpected text after the closing quote of "Reason"`}},
		{"comment refused", params, "Weight=10 # heavy", slurmconf.ParseError{Line: 1, Col: 11, Msg: `comments are not allowed here`}},
		{"line break refused", params, "Weight=10\nCPUs=1", slurmconf.ParseError{Line: 1, Col: 10, Msg: `line breaks are not allowed here`}},
		{"continuation refused", params, `Weight=10 \`, slurmconf.ParseError{Line: 1, Col: 11, Msg: `line continuation is not allowed here`}},
		{"doc: bad line", doc, "ClusterName=x\nSlurmctldHost=a\n  PartitionName=p Nodes=n MaxTime\n", slurmconf.ParseError{Line: 3, Col: 27, Key: "MaxTime", Msg: `malformed key=value "MaxTime": missing '=' after the key`}},
		{"doc: entry key not first", doc, "ClusterName=x NodeName=n1\n", slurmconf.ParseError{Line: 1, Col: 15, Key: "NodeName", Msg: `"NodeName" must start its own line`}},
		{"doc: unbalanced over continuation", doc, "A=1\nDownNodes=n Reason=\"a \\\n b\n", slurmconf.ParseError{Line: 2, Col: 20, Key: "Reason", Msg: `unbalanced quotes in the value of "Reason"`}},
		{"doc: empty include", doc, "Include   # nothing\n", slurmconf.ParseError{Line: 1, Col: 1, Key: "Include", Msg: `Include needs a file name`}},
		{"doc: include trailing text", doc, "Include a b\n", slurmconf.ParseError{Line: 1, Col: 11, Key: "Include", Msg: `unexpected text after the Include file name`}},
		{"doc: empty node name", doc, "NodeName=\"\" CPUs=1\n", slurmconf.ParseError{Line: 1, Col: 10, Key: "NodeName", Msg: `empty value for "NodeName": it needs a name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.parse(tt.in)
			var pe *slurmconf.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			if d := cmp.Diff(tt.want, *pe); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseErrorString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  slurmconf.ParseError
		want string
	}{
		{slurmconf.ParseError{Line: 3, Col: 15, Key: "MaxTme", Msg: `unknown partition key "MaxTme"`}, `line 3, column 15: unknown partition key "MaxTme"`},
		{slurmconf.ParseError{Line: 3, Msg: "m"}, "line 3: m"},
		{slurmconf.ParseError{Col: 4, Msg: "m"}, "column 4: m"},
		{slurmconf.ParseError{Msg: "m"}, "m"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestValidateParams(t *testing.T) {
	t.Parallel()
	if err := slurmconf.ValidatePartitionParams(slurmconf.Params{{Key: "maxtime", Value: "1"}, {Key: "Shared", Value: "NO"}}); err != nil {
		t.Errorf("ValidatePartitionParams: %v", err)
	}
	if err := slurmconf.ValidateNodeParams(slurmconf.Params{{Key: "Feature", Value: "a"}, {Key: "weight", Value: "1"}}); err != nil {
		t.Errorf("ValidateNodeParams: %v", err)
	}
	for _, tt := range []struct {
		name string
		err  error
		want slurmconf.ParseError
	}{
		{"partition alias", slurmconf.ValidatePartitionParams(slurmconf.Params{{Key: "Shared", Value: "NO"}, {Key: "OverSubscribe", Value: "NO"}}),
			slurmconf.ParseError{Key: "OverSubscribe", Msg: `duplicate key "OverSubscribe": it means the same as "Shared" given`}},
		{"node name key", slurmconf.ValidateNodeParams(slurmconf.Params{{Key: "nodename", Value: "x"}}),
			slurmconf.ParseError{Key: "nodename", Msg: `key "nodename" is not allowed here: it names the node`}},
		{"nodeset", slurmconf.ValidateNodeSetParams(slurmconf.Params{{Key: "Nodes", Value: "x"}, {Key: "Weight", Value: "1"}}),
			slurmconf.ParseError{Key: "Weight", Msg: `unknown nodeset key "Weight"`}},
		{"downnodes", slurmconf.ValidateDownNodesParams(slurmconf.Params{{Key: "Reasn", Value: "x"}}),
			slurmconf.ParseError{Key: "Reasn", Msg: `unknown downnodes key "Reasn" (did you mean "Reason"?)`}},
	} {
		var pe *slurmconf.ParseError
		if !errors.As(tt.err, &pe) {
			t.Errorf("%s: got %v, want a *ParseError", tt.name, tt.err)
			continue
		}
		if d := cmp.Diff(tt.want, *pe); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestParamsMethods(t *testing.T) {
	t.Parallel()
	p := slurmconf.Params{{Key: "MaxTime", Value: "1"}, {Key: "Nodes", Value: "a"}, {Key: "maxtime", Value: "2"}}
	if v, ok := p.Get("MAXTIME"); !ok || v != "1" {
		t.Errorf("Get = %q, %v", v, ok)
	}
	p.Set("MAXTIME", "3")
	p.Set("State", "UP")
	want := slurmconf.Params{{Key: "MaxTime", Value: "3"}, {Key: "Nodes", Value: "a"}, {Key: "State", Value: "UP"}}
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("after Set (-want +got):\n%s", d)
	}
	if !p.Delete("nodes") || p.Delete("nodes") || p.Has("Nodes") {
		t.Error("Delete did not remove Nodes exactly once")
	}
	if d := cmp.Diff([]string{"MaxTime", "State"}, p.Keys()); d != "" {
		t.Errorf("Keys (-want +got):\n%s", d)
	}
	c := p.Clone()
	c.Set("State", "DOWN")
	if v, _ := p.Get("State"); v != "UP" {
		t.Error("Clone shares storage")
	}
}

func TestParamsString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    slurmconf.Params
		want  string
		check bool // Check() succeeds
	}{
		{"plain", slurmconf.Params{{Key: "A", Value: "1"}, {Key: "B", Value: "x,y"}}, "A=1 B=x,y", true},
		{"spaces quoted", slurmconf.Params{{Key: "Reason", Value: "a b"}}, `Reason="a b"`, true},
		{"hash escaped", slurmconf.Params{{Key: "Reason", Value: "#1"}}, `Reason=\#1`, true},
		{"backslash escaped", slurmconf.Params{{Key: "P", Value: `a\b`}}, `P=a\\b`, true},
		{"empty", slurmconf.Params{{Key: "Reason", Value: ""}}, `Reason=""`, true},
		{"quote inside", slurmconf.Params{{Key: "X", Value: `a"b`}}, `X=a"b`, true},
		{"quote and space", slurmconf.Params{{Key: "X", Value: `a "b"`}}, `X="a 'b'"`, false},
		{"leading quote", slurmconf.Params{{Key: "X", Value: `"b`}}, `X='b`, false},
		{"newline", slurmconf.Params{{Key: "X", Value: "a\nb"}}, `X="a b"`, false},
		{"none", nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.in.String()
			if got != tt.want {
				t.Errorf("String() = %s, want %s", got, tt.want)
			}
			if err := tt.in.Check(); (err == nil) != tt.check {
				t.Errorf("Check() = %v, want ok=%v", err, tt.check)
			}
			if !tt.check {
				return
			}
			back, err := slurmconf.ParseParams(got)
			if err != nil {
				t.Fatalf("ParseParams(%s): %v", got, err)
			}
			if d := cmp.Diff(tt.in, back); d != "" {
				t.Errorf("re-parse (-want +got):\n%s", d)
			}
		})
	}
}

func TestEntryStrings(t *testing.T) {
	t.Parallel()
	p, err := slurmconf.ParsePartition(`PartitionName=batch Nodes=batch MaxTime=1:00:00 AllowGroups="a b"`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), `PartitionName=batch Nodes=batch MaxTime=1:00:00 AllowGroups="a b"`; got != want {
		t.Errorf("Partition.String() = %s, want %s", got, want)
	}
	n, err := slurmconf.ParseNode("nodename=n[1-2] CPUs=4 feature=x")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(slurmconf.Node{Name: "n[1-2]", Params: slurmconf.Params{{Key: "CPUs", Value: "4"}, {Key: "feature", Value: "x"}}}, n); d != "" {
		t.Errorf("ParseNode (-want +got):\n%s", d)
	}
	if got, want := n.String(), "NodeName=n[1-2] CPUs=4 feature=x"; got != want {
		t.Errorf("Node.String() = %s, want %s", got, want)
	}
	s, err := slurmconf.ParseNodeSet("NodeSet=gpu Feature=gpu")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "NodeSet=gpu Feature=gpu"; got != want {
		t.Errorf("NodeSet.String() = %s, want %s", got, want)
	}
	dn, err := slurmconf.ParseDownNodes(`DownNodes=n1 State=DOWN Reason="bad fan"`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dn.String(), `DownNodes=n1 State=DOWN Reason="bad fan"`; got != want {
		t.Errorf("DownNodes.String() = %s, want %s", got, want)
	}
	if len(slurmconf.PartitionKeys()) == 0 || len(slurmconf.NodeKeys()) == 0 {
		t.Error("empty key lists")
	}
}

func partition(s string) error { _, err := slurmconf.ParsePartition(s); return err }
func node(s string) error      { _, err := slurmconf.ParseNode(s); return err }
func nodeSet(s string) error   { _, err := slurmconf.ParseNodeSet(s); return err }
func downNodes(s string) error { _, err := slurmconf.ParseDownNodes(s); return err }
func params(s string) error    { _, err := slurmconf.ParseParams(s); return err }
func doc(s string) error       { _, err := slurmconf.Parse([]byte(s)); return err }
