// Package systemd holds no code: it is the home of tether-serve.service and
// tether-agent.service, and of the test that checks them (their hardening,
// writable paths, secrets and stop timeouts, and systemd-analyze verify).
package systemd
