package host_test

import (
	"errors"
	"testing"

	"github.com/tetherhq/tether/host"
)

// Check takes the values of a field's type, format and bounds as the
// JSON decoder or a terminal gives them, and refuses the rest with what
// would fit.
func TestFormFieldCheck(t *testing.T) {
	two := 2.0
	str := func(format string) host.FormField { return host.FormField{Name: "f", Type: "string", Format: format} }
	num := host.FormField{Name: "n", Type: "number", Minimum: &two}
	for _, c := range []struct {
		f      host.FormField
		v      any
		reason string
	}{
		{str("uri"), "https://example.com/a b", ""},
		{str("uri"), "mailto:ops@example.com", ""},
		{str("uri"), "file:///srv/deploy.yaml", ""},
		{str("uri"), "https:", "must be a full address, as https://example.com/"},
		{str("uri"), "example.com", "must be a full address, as https://example.com/"},
		{str("date"), "2026-02-30", "must be a date, as 2026-12-06"},
		{str("date-time"), "2026-12-06T16:30:00+01:00", ""},
		{str("date-time"), "2026-12-06 16:30", "must be a date and time, as 2026-12-06T16:30:00Z"},
		{str("email"), "ops@example.com", ""},
		{str("email"), "<ops@example.com>", "must be an email address, as ann@example.com"},
		{str("hostname"), "not checked here", ""},
		{str(""), 5.0, "must be text"},
		{num, 2, ""},
		{num, int64(3), ""},
		{num, 1.5, "must be at least 2"},
		{num, "3", "must be a number"},
		{host.FormField{Name: "c", Type: "integer", Choices: []host.FormChoice{{Value: 1.0, Label: "One"}}}, int64(1), ""},
		{host.FormField{Name: "b", Type: "boolean"}, "yes", "must be true or false"},
		{host.FormField{Name: "o", Type: "string"}, nil, ""},
	} {
		err := c.f.Check(c.v)
		var fe *host.FormError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("Check(%#v) on %+v = %v, want it to fit", c.v, c.f, err)
		case c.reason != "" && (!errors.As(err, &fe) || fe.Field != c.f.Name || fe.Reason != c.reason || !errors.Is(err, host.ErrFormInvalid)):
			t.Errorf("Check(%#v) on %+v = %v, want %q", c.v, c.f, err, c.reason)
		}
	}
}
