module github.com/charmed-slurm/operators/autoscaler

go 1.26.8

require (
	github.com/charmed-slurm/operators/interfaces v0.0.0-00010101000000-000000000000
	github.com/charmed-slurm/operators/libs v0.0.0-00010101000000-000000000000
	github.com/google/go-cmp v0.7.0
)

replace github.com/charmed-slurm/operators/libs => ../libs

replace github.com/charmed-slurm/operators/interfaces => ../interfaces
