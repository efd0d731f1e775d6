package serve

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// limiter counts failed logins per client address and in all, per
// minute. Only failures are counted and only failures are refused: a
// valid credential is checked before the limiter and always succeeds,
// so nobody can lock the owner out by guessing wrong (behind a proxy
// every client may share one address).
type limiter struct {
	mu     sync.Mutex
	window time.Time
	all    int
	per    map[string]int
	now    func() time.Time
}

const (
	maxFailsPerIP = 10
	maxFailsAll   = 100
	// maxTrackedIPs bounds the per-address counts; past it they are
	// cleared (the global count still holds for the window).
	maxTrackedIPs = 10000
)

func (l *limiter) init() {
	l.per = map[string]int{}
	l.now = time.Now
}

// roll starts a new window when a minute has passed (l.mu held).
func (l *limiter) roll() time.Time {
	now := l.now()
	if now.Sub(l.window) >= time.Minute {
		l.window, l.all = now, 0
		clear(l.per)
	}
	return now
}

// blocked returns how long ip must wait before a wrong credential is
// judged again, 0 when it may try.
func (l *limiter) blocked(ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.roll()
	if l.per[ip] >= maxFailsPerIP || l.all >= maxFailsAll {
		return l.window.Add(time.Minute).Sub(now)
	}
	return 0
}

// fail counts a failed login from ip.
func (l *limiter) fail(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	if len(l.per) >= maxTrackedIPs {
		clear(l.per)
	}
	l.per[ip]++
	l.all++
}

// clientIP is the address a request's failures are counted under: the
// TCP peer, or, when the peer is a trusted proxy (Options.TrustedProxies),
// the right-most X-Forwarded-For hop that is not itself a trusted proxy.
// Hops left of that one were written by the client and prove nothing. A
// peer that is not trusted cannot choose its address by sending the
// header.
func (s *Server) clientIP(r *http.Request) string {
	peer := remoteIP(r)
	if len(s.opts.TrustedProxies) == 0 {
		return peer
	}
	addr, err := netip.ParseAddr(peer)
	if err != nil || !s.trustedProxy(addr) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	client := addr
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			h := strings.TrimSpace(parts[j])
			if h == "" {
				continue
			}
			a, err := parseHop(h)
			if err != nil {
				// Garbage where an address was due: the last hop we
				// could read (a trusted one) is all we know.
				return client.String()
			}
			client = a
			if !s.trustedProxy(a) {
				return a.String()
			}
		}
	}
	return client.String()
}

// parseHop reads one X-Forwarded-For entry: an address, maybe with a
// port, maybe bracketed.
func parseHop(h string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.Unmap(), nil
	}
	host, _, err := net.SplitHostPort(h)
	if err != nil {
		return netip.Addr{}, err
	}
	a, err := netip.ParseAddr(host)
	return a.Unmap(), err
}

func (s *Server) trustedProxy(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
