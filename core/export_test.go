package core

import "google.golang.org/grpc/connectivity"

// ControlState reports the state of f's gRPC connection to famd, for the
// external tests of reconnection.
func ControlState(f *Fam) connectivity.State { return f.remote.conn.GetState() }
