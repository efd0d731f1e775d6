package oidctest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestProvider walks the authorization code flow by hand, as a relying
// party's requests look on the wire: PKCE is required, the code is
// single-use, the ID token carries the claims, the client secret is
// checked.
func TestProvider(t *testing.T) {
	const redirect = "http://127.0.0.1:1/auth/callback"
	p := New(t, &Options{ClientSecret: "s3cret", RedirectURIs: []string{redirect}, Users: []User{
		{ID: "u1", Email: "alice@example.com", Name: "Alice", Password: "pw", Groups: []string{"eng"}}}})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(req *http.Request) (*http.Response, string) {
		t.Helper()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	get := func(u string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", u, nil)
		return do(req)
	}

	resp, body := get(p.Issuer() + "/.well-known/openid-configuration")
	var disc struct {
		Issuer  string   `json:"issuer"`
		Methods []string `json:"code_challenge_methods_supported"`
		JWKS    string   `json:"jwks_uri"`
	}
	if err := json.Unmarshal([]byte(body), &disc); err != nil || disc.Issuer != p.Issuer() || !slices.Contains(disc.Methods, "S256") {
		t.Fatalf("discovery %d: %v %s", resp.StatusCode, err, body)
	}
	if resp, body := get(disc.JWKS); resp.StatusCode != 200 || !strings.Contains(body, `"RS256"`) {
		t.Fatalf("jwks: %d %s", resp.StatusCode, body)
	}

	auth := url.Values{"client_id": {p.ClientID}, "redirect_uri": {redirect}, "response_type": {"code"},
		"scope": {"openid email profile"}, "state": {"st"}, "nonce": {"n1"}}
	// Without PKCE: refused back to the client.
	resp, _ = get(p.Issuer() + "/authorize?" + auth.Encode())
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, redirect) || !strings.Contains(loc, "error=invalid_request") {
		t.Fatalf("authorize without PKCE: %d %s", resp.StatusCode, loc)
	}

	verifier := "a-verifier-of-enough-length-0123456789-abcdefghijklmnop"
	sum := sha256.Sum256([]byte(verifier))
	auth.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	auth.Set("code_challenge_method", "S256")
	resp, _ = get(p.Issuer() + "/authorize?" + auth.Encode())
	loginURL, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loginURL.Path != "/login" {
		t.Fatalf("authorize: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get(p.Issuer() + loginURL.String()); resp.StatusCode != 200 ||
		!strings.Contains(body, `id="username"`) || !strings.Contains(body, `id="password"`) || !strings.Contains(body, `id="login"`) {
		t.Fatalf("login page: %d %s", resp.StatusCode, body)
	}
	post := func(pw string) *http.Response {
		req, _ := http.NewRequest("POST", p.Issuer()+"/login", strings.NewReader(url.Values{
			"id": {loginURL.Query().Get("id")}, "username": {"Alice@example.com"}, "password": {pw}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, _ := do(req)
		return resp
	}
	if resp := post("wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", resp.StatusCode)
	}
	resp = post("pw")
	resp, _ = get(resp.Header.Get("Location")) // the op's callback
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Query().Get("state") != "st" || back.Query().Get("code") == "" {
		t.Fatalf("callback: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	code := back.Query().Get("code")

	exchange := func(secret string) (*http.Response, string) {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		req, _ := http.NewRequest("POST", p.Issuer()+"/oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(p.ClientID, secret)
		return do(req)
	}
	if resp, _ := exchange("wrong"); resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("wrong client secret: %d", resp.StatusCode)
	}
	resp, body = exchange("s3cret")
	var tok struct {
		IDToken string `json:"id_token"`
	}
	if err := json.Unmarshal([]byte(body), &tok); err != nil || resp.StatusCode != 200 {
		t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	parts := strings.Split(tok.IDToken, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(payload, &claims)
	if claims["sub"] != "u1" || claims["email"] != "alice@example.com" || claims["email_verified"] != true ||
		claims["name"] != "Alice" || claims["nonce"] != "n1" || claims["iss"] != p.Issuer() {
		t.Fatalf("ID token claims = %v", claims)
	}
	if g, _ := claims["groups"].([]any); len(g) != 1 || g[0] != "eng" {
		t.Fatalf("groups claim = %v", claims["groups"])
	}
	if resp, _ := exchange("s3cret"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("code replayed: %d, want 400", resp.StatusCode)
	}
}
