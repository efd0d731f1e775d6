package cluster

// Crash makes a vanish as a killed process would (for tests).
func Crash(a *Agent) { a.crash() }
