// Package gres finds and describes a node's Slurm generic resources (GRES):
// NVIDIA GPUs detected from their device files and nvidia-smi, and other
// resources an administrator declares. It renders what a dynamic node needs:
// the Gres= value of `slurmd -Z --conf` ("gpu:tesla_t4:2"), the gres.conf
// lines that give every device its File, and the names slurm.conf's
// GresTypes must list.
//
// Detection runs nothing through a shell: a [Detector] reads device files
// under its Root and runs nvidia-smi through its Runner, in nvidia-smi's
// documented CSV query format:
//
//	nvidia-smi --query-gpu=minor_number,name,uuid --format=csv,noheader
//
// Nothing is assumed when neither is there: no device file and no
// nvidia-smi means no GPU. Device files without a working nvidia-smi give
// untyped GPUs (model unknown); GPUs that nvidia-smi reports without a
// device file are not used (jobs could not open them). Every such choice is
// recorded in [Detection.Notes].
//
//	d := gres.Detector{Runner: command.Exec{}, Root: "/"}
//	det, err := d.Detect(ctx)
//	res := det.Resources()                 // one Resource per GPU model
//	conf := "Gres=" + res.String()         // for slurmd --conf
//	lines := res.ConfLines("gpu-0")        // for the node's local gres.conf
//
// Declared resources (a charm option) are parsed and validated by
// [ParseDeclaration]; a Gres= value (node-config) by [ParseGres]. Both are
// strict: unknown keys, bad names, counts or files are errors naming the
// field. This package never logs and runs no command except through the
// injected Runner.
package gres
