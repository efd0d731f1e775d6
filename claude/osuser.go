package claude

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/tetherhq/tether/internal/proc"
)

// Running the CLI as another OS user (Options.User), as the official
// Python SDK's `user` option does: a host running as root (a shared
// server, a container's entry point) starts each CLI with the account of
// whoever the session is for, so the kernel's own file permissions keep
// people apart.

var (
	// ErrUnknownUser: Options.User names no account in the user database.
	ErrUnknownUser = errors.New("claude: unknown OS user")
	// ErrUserNotPermitted: the host may not start a process as another
	// user (only root, or a holder of CAP_SETUID and CAP_SETGID, may).
	// The error chain holds the kernel's syscall.EPERM too.
	ErrUserNotPermitted = errors.New("claude: not permitted to run the CLI as another OS user")
)

// UserError is why the CLI could not run as Options.User. It matches
// ErrUnknownUser or ErrUserNotPermitted, and its Cause (a user-database
// error, the start's error wrapping syscall.EPERM).
type UserError struct {
	User  string // Options.User as given
	Err   error  // ErrUnknownUser or ErrUserNotPermitted
	Cause error  // what the lookup or the start reported; may be nil
}

func (e *UserError) Error() string {
	msg := fmt.Sprintf("%v %q", e.Err, e.User)
	if errors.Is(e.Err, ErrUserNotPermitted) {
		msg += fmt.Sprintf(" (this process runs as uid %d; only root may switch users)", os.Geteuid())
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

func (e *UserError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// OSUser is an account the CLI runs as: Options.User resolved by
// LookupOSUser. Launch.User carries it to the Transport.
type OSUser struct {
	Name   string   // login name
	UID    uint32   // user ID
	GID    uint32   // primary group ID
	Groups []uint32 // supplementary group IDs (the primary one included when the database lists it)
	Home   string   // home directory ("" when the database has none)
}

// LookupOSUser resolves a login name or a numeric UID in the user
// database, with the account's groups. A name or UID without an entry is
// a *UserError matching ErrUnknownUser: a UID alone says nothing of the
// groups and HOME the CLI should get.
func LookupOSUser(name string) (*OSUser, error) {
	if name == "" {
		return nil, &UserError{User: name, Err: ErrUnknownUser, Cause: errors.New("empty name")}
	}
	var (
		u   *user.User
		err error
	)
	if _, perr := strconv.ParseUint(name, 10, 32); perr == nil {
		u, err = user.LookupId(name)
	} else {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return nil, &UserError{User: name, Err: ErrUnknownUser, Cause: err}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil { // Windows SIDs
		return nil, &UserError{User: name, Err: ErrUnknownUser, Cause: fmt.Errorf("uid %q is not numeric", u.Uid)}
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, &UserError{User: name, Err: ErrUnknownUser, Cause: fmt.Errorf("gid %q is not numeric", u.Gid)}
	}
	ou := &OSUser{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, &UserError{User: name, Err: ErrUnknownUser, Cause: fmt.Errorf("listing the groups: %w", err)}
	}
	for _, g := range ids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			ou.Groups = append(ou.Groups, uint32(n))
		}
	}
	return ou, nil
}

// resolveUser looks Options.User up once per Connect.
func (o *Options) resolveUser() error {
	if o.User == "" {
		return nil
	}
	u, err := LookupOSUser(o.User)
	if err != nil {
		return err
	}
	o.osUser = u
	return nil
}

// userEnv gives the CLI the user's HOME, USER and LOGNAME, unless
// Options.Env sets them: the CLI keeps its settings and transcripts in
// HOME, which must be the user's own to be writable.
func (o *Options) userEnv(put func(k, v string)) {
	u := o.osUser
	if u == nil {
		return
	}
	set := func(k, v string) {
		if _, ok := o.Env[k]; !ok && v != "" {
			put(k, v)
		}
	}
	set("HOME", u.Home)
	set("USER", u.Name)
	set("LOGNAME", u.Name)
}

// cred is what proc needs to start the CLI as u: nil for no user, or
// for the user this process already runs as (nothing to switch; a
// non-root process may not even set its own groups).
func (u *OSUser) cred() *proc.Cred {
	if u == nil {
		return nil
	}
	if int(u.UID) == os.Geteuid() && int(u.GID) == os.Getegid() {
		return nil
	}
	return &proc.Cred{UID: u.UID, GID: u.GID, Groups: u.Groups}
}

// startError words a failed start: one refused for want of privilege to
// switch users is a *UserError.
func startError(l *Launch, err error) error {
	if l.User != nil && errors.Is(err, syscall.EPERM) {
		return &UserError{User: l.User.Name, Err: ErrUserNotPermitted, Cause: fmt.Errorf("starting %s: %w", l.Path, err)}
	}
	return fmt.Errorf("claude: starting %s: %w", l.Path, err)
}
