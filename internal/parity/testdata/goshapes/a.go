package goshapes

type Agent struct {
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
}

type Other struct {
	Name string `json:"name"`
}

type Session struct{}

func (s *Session) SetModel(model string) {}

func (s *Session) Toggle(name string, enabled bool) {
	_ = struct {
		ServerName string `json:"serverName"`
	}{name}
}
