package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude"
)

// The transcript mirror: the CLI's session file (the conversation it
// resumes from) is copied into StreamTranscripts as it grows, in chunks
// numbered by their byte offset in the file, so that another agent can
// rebuild the file and resume the conversation when this one dies.

// mirrorState is how far a session's file has been mirrored.
type mirrorState struct {
	cli    string // the CLI session id the offset belongs to
	offset int64
}

// keepMirror mirrors the transcript every MirrorInterval, when poked (a
// turn ended) and a last time when the session ends.
func (s *agentSession) keepMirror() {
	defer s.wg.Done()
	defer close(s.mirrorDone)
	every := s.a.opts.MirrorInterval
	if every <= 0 {
		every = s.a.b.ttl / 3
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var recorded time.Time // the change record's last mirror
	for {
		turnEnd := false
		select {
		case <-t.C:
		case <-s.wakeTx:
			turnEnd = true
		case <-s.ctx.Done():
			if !s.a.gone() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				s.mirrorOnce(ctx)
				s.mirrorChanges(ctx)
				cancel()
			}
			return
		}
		s.mirrorOnce(s.ctx)
		if turnEnd || time.Since(recorded) >= changesEvery {
			s.mirrorChanges(s.ctx)
			recorded = time.Now()
		}
	}
}

// changesEvery bounds how often a session's change record is mirrored
// within a turn (each up to max_payload, kept as long as transcripts):
// at a turn's end it is mirrored whenever files changed.
const changesEvery = time.Minute

// The change record (what host.Session.Changes works from: the start
// commit, the files' originals) is mirrored beside the transcript, on
// subjectTranscript + id + suffixChanges (one subject token, so that
// agents' NATS permissions on the mirror, "tether.v1.tx.*", cover it;
// "~" is in no session id), whole in one message of at
// most the server's max_payload (the largest originals left out first:
// host.Session.MarshalChanges), when files changed: at a turn's end, at
// most every changesEvery within a turn, and when the session ends. The
// agent that takes the session over, wakes it or resumes it in its place
// reads the last one (host.Options.ChangesFrom). Changes made after the
// last mirror (within the turn a crash cut short) are then known only
// to git, as changes made before the session started. An older agent neither writes nor reads
// these; it reads the transcript by its exact subject.
const suffixChanges = "~changes"

// mirrorChanges publishes the session's change record when files changed
// since it last did.
func (s *agentSession) mirrorChanges(ctx context.Context) {
	if !s.filesChanged.Swap(false) {
		return
	}
	data, err := s.hs.MarshalChanges(int(s.a.b.nc.MaxPayload()) - 4<<10) // room for the headers
	if err != nil || len(data) == 0 {
		if err != nil {
			s.log.Warn("change record not mirrored", "session", s.id, "err", err)
		}
		return
	}
	sum := sha256.Sum256(data)
	if sum == s.lastChanges {
		return
	}
	// The message id makes a retry of this publish a duplicate, and no
	// other record one: a record may come back to an earlier content,
	// which must still be the last.
	if s.changesTag == "" {
		s.changesTag = randomID(4)
	}
	m := stamp(nats.NewMsg(subjectTranscript + s.id + suffixChanges))
	m.Data = data
	m.Header.Set(hdrMsgID, s.id+suffixChanges+"."+s.changesTag+"."+strconv.FormatUint(s.changesN, 10))
	if err := s.a.b.publishRetry(ctx, m); err != nil {
		s.filesChanged.Store(true) // next time
		s.log.Debug("change record not mirrored", "session", s.id, "err", err)
		return
	}
	s.lastChanges = sum
	s.changesN++
}

// readChanges returns session id's last mirrored change record, nil when
// there is none (it changed no file, or ran on an agent that mirrored
// none) or it cannot be read now: the session then counts its changes
// from its new start, as before there were records.
func (a *Agent) readChanges(ctx context.Context, id string) []byte {
	m, err := a.b.tx.GetLastMsgForSubject(ctx, subjectTranscript+id+suffixChanges)
	if err != nil {
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			a.log.Warn("change record not read; changes count from now", "session", id, "err", err)
		}
		return nil
	}
	return m.Data
}

// mirrorOnce publishes what the session file gained since last time.
func (s *agentSession) mirrorOnce(ctx context.Context) {
	cli := s.hs.SessionID()
	if cli == "" || s.configDir == "" {
		return
	}
	s.mu.Lock()
	cwd := s.rec.Cwd
	st := s.mirror
	s.mu.Unlock()
	if st.cli != cli {
		st = mirrorState{cli: cli}
		if s.rec.CLISession == cli && s.restored > 0 {
			st.offset = s.restored
		}
	}
	path := claude.SessionFilePath(s.configDir, cwd, cli)
	f, err := os.Open(path)
	if err != nil {
		return // not written yet
	}
	defer f.Close()
	if _, err := f.Seek(st.offset, io.SeekStart); err != nil {
		return
	}
	// A chunk fits in a message whatever the server's max_payload: a
	// bigger one would be refused by the client at every try.
	buf := make([]byte, min(transcriptChunk, s.a.b.maxPart()))
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			m := stamp(nats.NewMsg(subjectTranscript + s.id))
			m.Data = buf[:n]
			off := strconv.FormatInt(st.offset, 10)
			m.Header.Set(hdrCLISess, cli)
			m.Header.Set(hdrOffset, off)
			m.Header.Set(hdrMsgID, s.id+"."+cli+"."+off)
			if perr := s.a.b.publishRetry(ctx, m); perr != nil {
				break
			}
			st.offset += int64(n)
		}
		if err != nil {
			break
		}
	}
	s.mu.Lock()
	s.mirror = st
	s.mu.Unlock()
}

// restoreTranscript rebuilds a session's file from the mirror, in the
// CLI's config folder configDir, before the CLI resumes it; it records
// how much was restored, so that the mirror carries on from there.
func (a *Agent) restoreTranscript(ctx context.Context, rec *SessionInfo, configDir string) (int64, error) {
	if configDir == "" {
		return 0, &CommandError{Code: codeNoTranscript, Message: "no CLI config folder to restore into"}
	}
	path := claude.SessionFilePath(configDir, rec.Cwd, rec.CLISession)
	data, err := a.b.readMirror(ctx, rec.ID, rec.CLISession)
	if err != nil {
		return 0, err
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() >= int64(len(data)) {
		// The file is here already, as long as the mirror or longer (the
		// mirror is a prefix of it: the CLI only appends). Keep it.
		return int64(len(data)), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, err
	}
	tmp := path + ".tether-restore"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, err
	}
	a.log.Info("transcript restored", "session", rec.ID, "bytes", len(data))
	return int64(len(data)), nil
}

// readMirror joins the chunks of CLI session cli's file that session id
// mirrored: the file as far as it was mirrored. It fails with a
// *CommandError of code no_transcript when nothing was mirrored or the
// mirror has a gap (retention), and with an *MessageError (ErrMalformed)
// on a chunk without an offset.
func (b *bus) readMirror(ctx context.Context, id, cli string) ([]byte, error) {
	subj := subjectTranscript + id
	var data []byte
	seq := uint64(1)
	for {
		m, err := b.tx.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: reading the transcript mirror: %w", err)
		}
		seq = m.Sequence + 1
		if m.Header.Get(hdrCLISess) != cli {
			continue
		}
		off, err := strconv.ParseInt(m.Header.Get(hdrOffset), 10, 64)
		if err != nil || off < 0 {
			return nil, &MessageError{Subject: subj, Reason: "bad offset", Err: ErrMalformed}
		}
		switch {
		case off == int64(len(data)):
			data = append(data, m.Data...)
		case off+int64(len(m.Data)) <= int64(len(data)):
			// a chunk mirrored twice
		default:
			return nil, &CommandError{Code: codeNoTranscript, Message: fmt.Sprintf("mirror has a gap at byte %d (retention?)", len(data))}
		}
	}
	if len(data) == 0 {
		return nil, &CommandError{Code: codeNoTranscript, Message: "nothing mirrored for CLI session " + cli}
	}
	return data, nil
}
