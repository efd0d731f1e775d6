package serve

import (
	"sync"
	"time"
)

// limiter counts failed logins per address and in all, per minute.
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

// blocked returns how long ip must wait, 0 when it may try.
func (l *limiter) blocked(ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.roll()
	if l.per[ip] >= maxFailsPerIP || l.all >= maxFailsAll {
		return l.window.Add(time.Minute).Sub(now)
	}
	return 0
}

func (l *limiter) fail(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	if len(l.per) >= 10000 {
		clear(l.per) // bounded; the global count still holds
	}
	l.per[ip]++
	l.all++
}
