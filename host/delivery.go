package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
)

// DeliveryStatus is how far a prompt got.
type DeliveryStatus int

// Delivery statuses. A prompt is queued when sent, accepted when the CLI
// takes it into a turn (it echoes it back), and answered by the result of
// the turn it went into; the CLI merges prompts sent during a turn into
// one next turn, so several deliveries can share one result.
const (
	DeliveryQueued DeliveryStatus = iota
	DeliveryAccepted
	DeliveryAnswered
	// DeliveryCancelled: withdrawn with CancelMessage before the CLI took
	// it.
	DeliveryCancelled
	// DeliveryLost: the CLI ended before answering it.
	DeliveryLost
)

var deliveryNames = [...]string{"queued", "accepted", "answered", "cancelled", "lost"}

// String returns the status in lower case ("accepted").
func (d DeliveryStatus) String() string {
	if d >= 0 && int(d) < len(deliveryNames) {
		return deliveryNames[d]
	}
	return fmt.Sprintf("DeliveryStatus(%d)", int(d))
}

// ErrNotQueued is returned by CancelMessage for a message the CLI has
// already taken (or that is not the session's).
var ErrNotQueued = errors.New("host: message is not queued")

// ErrMessageCancelled is what Delivery.Wait returns for a cancelled
// message.
var ErrMessageCancelled = errors.New("host: message cancelled")

// ErrKilled is the cause of a CLI that ForceInterrupt had to kill.
var ErrKilled = errors.New("host: CLI killed by ForceInterrupt")

// A Delivery follows one prompt sent with Session.Send or SendMessage.
type Delivery struct {
	// UUID is the message's uuid, which the CLI echoes back.
	UUID string
	// Message is what was sent.
	Message *claude.UserMessage
	// Sent is when it was sent.
	Sent time.Time

	s      *Session
	status DeliveryStatus // under s.mu
	result *claude.ResultMessage
	err    error
	done   chan struct{}
	span   trace.Span // the turn's; ended by resolve
}

// Status returns how far the prompt got.
func (d *Delivery) Status() DeliveryStatus {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return d.status
}

// Wait waits until the prompt is answered, cancelled or lost, and returns
// the result of the turn that answered it (with its *claude.ResultError
// when the turn failed), ErrMessageCancelled, or why the CLI ended.
func (d *Delivery) Wait(ctx context.Context) (*claude.ResultMessage, error) {
	select {
	case <-d.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return d.result, d.err
}

// Send sends a text prompt; see SendMessage.
func (s *Session) Send(ctx context.Context, prompt string) (*Delivery, error) {
	return s.SendMessage(ctx, claude.NewUserMessage(prompt))
}

// SendMessage sends a user message and returns its Delivery. The
// session gives the message a fresh UUID when it has none, so that the
// CLI's echo can be matched to it.
func (s *Session) SendMessage(ctx context.Context, m *claude.UserMessage) (*Delivery, error) {
	if m == nil {
		return nil, errors.New("host: SendMessage: nil message")
	}
	c := *m
	if c.UUID == "" {
		c.UUID = newUUID()
	}
	d := &Delivery{UUID: c.UUID, Message: &c, Sent: time.Now(), s: s, done: make(chan struct{})}
	// A sleeping session wakes for the prompt (Do has woken it already).
	if err := s.Wake(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	cs := s.cs
	switch {
	case s.closed || s.ended:
		s.mu.Unlock()
		return nil, claude.ErrClosed
	case cs == nil:
		err := s.cause
		s.mu.Unlock()
		if err == nil {
			err = errors.New("host: the CLI is restarting")
		}
		return nil, fmt.Errorf("host: no CLI to send to: %w", err)
	}
	s.startTurn(ctx, d)
	s.deliveries = append(s.deliveries, d)
	s.recordDelivery(d)
	s.mu.Unlock()
	if err := cs.SendMessage(ctx, &c); err != nil {
		s.mu.Lock()
		s.resolve(d, DeliveryLost, nil, err)
		s.mu.Unlock()
		return nil, err
	}
	return d, nil
}

// CancelMessage withdraws a queued message before the CLI takes it into
// a turn (the CLI's cancel_async_message). It fails with ErrNotQueued
// once the CLI has taken it.
func (s *Session) CancelMessage(ctx context.Context, uuid string) error {
	s.mu.Lock()
	d := s.delivery(uuid)
	cs := s.cs
	s.mu.Unlock()
	if d == nil || d.Status() != DeliveryQueued || cs == nil {
		return ErrNotQueued
	}
	raw, err := cs.Control(ctx, "cancel_async_message", struct {
		MessageUUID string `json:"message_uuid"`
	}{uuid})
	if err != nil {
		return err
	}
	var r struct {
		Cancelled bool `json:"cancelled"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("host: cancel_async_message: %w", err)
	}
	if !r.Cancelled {
		return ErrNotQueued
	}
	s.mu.Lock()
	s.resolve(d, DeliveryCancelled, nil, ErrMessageCancelled)
	s.transition()
	s.mu.Unlock()
	return nil
}

// Deliveries returns the messages sent and not yet answered, cancelled
// or lost, in send order.
func (s *Session) Deliveries() []*Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Delivery(nil), s.deliveries...)
}

func (s *Session) delivery(uuid string) *Delivery {
	for _, d := range s.deliveries {
		if d.UUID == uuid {
			return d
		}
	}
	return nil
}

// acknowledge handles the CLI's echo of a message (s.mu held). It reports
// whether to pass the echo on: the first echo of a uuid is, repeats are
// dropped.
func (s *Session) acknowledge(uuid string) bool {
	if uuid == "" {
		return true
	}
	if _, dup := s.replayed[uuid]; dup {
		return false
	}
	if len(s.replayed) >= 4096 {
		clear(s.replayed) // bounded; duplicates come close together
	}
	s.replayed[uuid] = struct{}{}
	if s.delivery(uuid) != nil {
		s.echoing = true
		s.accept(uuid)
	}
	return true
}

// accept marks uuid and every message queued before it accepted: the CLI
// takes its queue in order, and merges what was queued into one turn.
func (s *Session) accept(uuid string) {
	for i, d := range s.deliveries {
		if d.UUID != uuid {
			continue
		}
		for _, e := range s.deliveries[:i+1] {
			if e.status == DeliveryQueued {
				e.status = DeliveryAccepted
				s.recordDelivery(e)
			}
		}
		return
	}
}

// lifecycle handles CLI 2.1.330's command_lifecycle messages (s.mu held).
func (s *Session) lifecycle(m *claude.CommandLifecycleMessage) {
	d := s.delivery(m.CommandUUID)
	if d == nil {
		return
	}
	switch m.State {
	case "started":
		s.accept(m.CommandUUID)
	case "completed":
		if s.last != nil {
			s.resolve(d, DeliveryAnswered, s.last, s.lastErr)
		}
	case "cancelled":
		s.resolve(d, DeliveryCancelled, nil, ErrMessageCancelled)
	}
}

// answerDeliveries gives the turn's result to every accepted message. A
// CLI that has never echoed a message (a test double, a CLI without
// --replay-user-messages) is taken to have merged into the turn what
// was queued when it started.
func (s *Session) answerDeliveries(r *claude.ResultMessage) {
	if !s.echoing {
		for _, d := range s.turnQueued {
			if d.status == DeliveryQueued {
				d.status = DeliveryAccepted
				s.recordDelivery(d)
			}
		}
	}
	s.turnQueued = s.turnQueued[:0]
	for _, d := range append([]*Delivery(nil), s.deliveries...) {
		if d.status == DeliveryAccepted {
			s.resolve(d, DeliveryAnswered, r, r.Err())
		}
	}
}

// failDeliveries loses every unresolved message (s.mu held).
func (s *Session) failDeliveries(cause error) {
	if cause == nil {
		cause = errors.New("host: the CLI exited before answering")
	}
	for _, d := range append([]*Delivery(nil), s.deliveries...) {
		s.resolve(d, DeliveryLost, nil, cause)
	}
}

// resolve ends a delivery (s.mu held).
func (s *Session) resolve(d *Delivery, st DeliveryStatus, r *claude.ResultMessage, err error) {
	select {
	case <-d.done:
		return
	default:
	}
	d.status, d.result, d.err = st, r, err
	close(d.done)
	endTurn(d)
	s.recordDelivery(d)
	for i, e := range s.deliveries {
		if e == d {
			s.deliveries = append(s.deliveries[:i], s.deliveries[i+1:]...)
			break
		}
	}
}
