package goshapes

import "encoding/json"

// Wired has untagged fields and says its JSON in its methods and a
// decode function, as Tether's message types do.
type Wired struct {
	SessionID string
	Memory    string
	Extra     map[string]string
}

type wireWired struct {
	SessionID string `json:"session_id"`
}

func (w *Wired) MarshalJSON() ([]byte, error) {
	m := map[string]any{"memory": w.Memory}
	m["extra"] = w.Extra
	_ = wireWired{SessionID: w.SessionID}
	return json.Marshal(m)
}

func decodeWired(b []byte) (*Wired, error) {
	var x struct {
		Tool string `json:"tool"`
	}
	return &Wired{}, json.Unmarshal(b, &x)
}

// Plain has no JSON methods: only its own field names count.
type Plain struct {
	SessionID string
}
