package serve_test

import (
	"fmt"
	"net/http"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// A server for the sessions of this process, on loopback. Print the
// login URL once; the token is in its fragment.
func ExampleNewServer() {
	m := host.NewManager(nil)
	defer m.Close()
	b := serve.NewLocalBackend(m, &serve.LocalOptions{DefaultCwd: "/home/me/project"})
	srv := serve.NewServer(b, nil)
	defer srv.Close()
	fmt.Println("open", srv.LoginURL("http://127.0.0.1:7878"))
	_ = http.ListenAndServe("127.0.0.1:7878", srv) // blocks
}
