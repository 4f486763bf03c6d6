// Package slurmconf reads, edits and writes slurm.conf without losing
// anything a person wrote.
//
// # The document
//
// [Parse] turns slurm.conf text into a [Doc] that keeps every line: comments,
// blank lines, the order of lines and keys, the case of keys as written,
// Include lines, odd spacing, backslash continuations and quoted values.
// [Doc.Bytes] of an unedited document is byte-identical to the input. An
// edit renders again only the lines it concerns (one line per key=value
// group, keeping the line's trailing comment and indentation); every other
// line is written back byte for byte.
//
// Global parameters are read and changed with [Doc.Get], [Doc.GetAll],
// [Doc.Set], [Doc.Add] and [Doc.Delete]. Keys are matched
// case-insensitively, as Slurm does; names of nodes, nodesets and partitions
// are case-sensitive, as in Slurm. The entries a charm edits have the same
// four operations each; NodeName and DownNodes lines, which dynamic nodes
// never need, are read-only:
//
//	PartitionName=  Partition, Partitions, SetPartition, DeletePartition
//	NodeSet=        NodeSet, NodeSets, SetNodeSet, DeleteNodeSet
//	Include         Includes, AddInclude, DeleteInclude
//	NodeName=       Nodes
//	DownNodes=      DownNodesEntries
//
// FrontendName lines are kept as written ([Doc.FrontendNames] lists them).
// An entry's name key is not part of its [Params]: a [Partition] is
// {Name: "batch", Params: {Nodes=batch, MaxTime=1:00:00}}, and its String
// method gives the whole line, "PartitionName=batch Nodes=batch MaxTime=1:00:00".
//
// # Single lines
//
// [ParseParams] parses one line of key=value words, such as the
// partition-config option "DefaultTime=45:00 MaxTime=1:00:00" or the
// node-config action "Weight=10 Features=a,b". [ParsePartition],
// [ParseNode], [ParseNodeSet] and [ParseDownNodes] parse one complete entry
// line and check its keys against those slurmctld 22.05 accepts;
// [ValidatePartitionParams], [ValidateNodeParams], [ValidateNodeSetParams]
// and [ValidateDownNodesParams] check a [Params] alone, and [Doc.Validate]
// checks a whole document. [GlobalKey] tells whether a key is one of the
// global keys of 22.05 (with a "did you mean" key when not), and
// [PartitionKeys], [NodeKeys] and [GlobalKeys] list the known keys. Every
// syntax or validation problem is a *[ParseError] that names the line, the
// column and the key:
//
//	line 3, column 15: unknown partition key "MaxTme" (did you mean "MaxTime"?)
//
// # Slurm releases
//
// The functions above check against the key set of Slurm 22.05. [KeysOf]
// returns the [Keys] of another release, with the same checks as methods
// ([Keys.ValidatePartitionParams], [Keys.GlobalKey], [Keys.ParsePartition],
// ...) and [Doc.ValidateFor]: the set of Slurm 24.11 for 23.02 and later
// (partitions gain ExclusiveTopo, MaxCPUsPerSocket and PowerDownOnIdle, nodes
// RestrictedCoresPerGPU, SlurmctldPlugstack is gone, a few global keys are
// new), 22.05's before. Each set is proven against its release's own parser:
// 22.05's by this package's tests on the host, 24.11's by the same tests run
// inside a Debian 13 machine (tests/machines).
//
// # Syntax
//
// The syntax is Slurm's: "Key=Value" words separated by white space, with no
// space around '='; '#' starts a comment; a value may be double-quoted to
// hold white space (Reason="disk failed"); an empty value must be written
// Key=""; a backslash at the end of a line continues the line on the next
// one; any other backslash makes the next character literal ("\#" is a
// '#'); "Include <file>" includes another file. A line that starts with
// NodeName, NodeSet, PartitionName, DownNodes or FrontendName is an entry
// and that key must come first. Lines may end in "\n" or "\r\n".
//
// One deliberate difference from slurmctld: this package reads a '#' inside
// a double-quoted value as part of the value, where Slurm 22.05 starts a
// comment even inside quotes. Values this package writes always escape '#'
// and '\' with a backslash, so Slurm reads them exactly as they were set.
//
// # Files
//
// [Edit] reads a file, applies a function to its [Doc] and writes the result
// back atomically (temporary file in the same directory, fsync, rename,
// directory fsync), keeping the file's owner and mode; the original stays
// untouched when the function or the write fails, and a file whose content
// did not change is not rewritten. [ReadFile] and [WriteFile] are the two
// halves on their own.
//
// This package never runs commands: applying a changed slurm.conf
// (scontrol reconfigure) is up to the caller.
package slurmconf
