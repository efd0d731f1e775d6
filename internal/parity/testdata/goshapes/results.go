package goshapes

// ModeResult answers SetModeWith; SetMode drops it.
type ModeResult struct {
	Mode string `json:"mode"`
}

func (s *Session) SetMode(mode string) error { return nil }

func (s *Session) SetModeWith(mode string) (*ModeResult, error) { return &ModeResult{}, nil }

// Init holds what another call returns, as a field.
type Init struct {
	Last *ModeResult `json:"last"`
}
