package core

// ServerDown reports whether client f holds memory server id down (the
// session stream said so).
func ServerDown(f *Fam, id uint64) bool { return remoteOf(f).srv.isDown(id) }

// ServerRebuilding reports whether client f holds memory server id
// rebuilding.
func ServerRebuilding(f *Fam, id uint64) bool { return remoteOf(f).srv.isRebuilding(id) }

// SuspectServer is the data path's report that an operation on memory
// server id failed with err.
func SuspectServer(f *Fam, id uint64, err error) { remoteOf(f).srv.suspect(id, err) }

// WroteAround is the data path's report that a write to a redundant
// region completed without memory server id.
func WroteAround(f *Fam, id uint64, err error) { remoteOf(f).srv.wroteAround(id, err) }
