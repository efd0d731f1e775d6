package claude

import "time"

// SetMirrorBounds shrinks the mirror's queue bound and Close's wait for
// a test, returning a function that restores them.
func SetMirrorBounds(maxPending int, closeWait time.Duration) (restore func()) {
	mp, cw := mirrorMaxPending, mirrorCloseWait
	mirrorMaxPending, mirrorCloseWait = maxPending, closeWait
	return func() { mirrorMaxPending, mirrorCloseWait = mp, cw }
}

// MirrorKeyOf exposes mirrorKey.
func MirrorKeyOf(configDir, path string) (SessionKey, bool) { return mirrorKey(configDir, path) }
