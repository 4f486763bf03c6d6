module github.com/charmed-slurm/operators/interfaces

go 1.26.8

require (
	github.com/charmed-slurm/operators/libs v0.0.0-00010101000000-000000000000
	github.com/google/go-cmp v0.7.0
	github.com/ulikunitz/xz v0.5.15
	gopkg.in/yaml.v3 v3.0.1
)

replace github.com/charmed-slurm/operators/libs => ../libs
