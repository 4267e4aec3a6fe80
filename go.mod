module github.com/gofam/openfam

go 1.26

require (
	go.etcd.io/bbolt v1.5.0
	golang.org/x/sys v0.45.0
)
