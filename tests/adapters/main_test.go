package adapters

import (
	"os"
	"testing"

	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

// TestMain stops what the tests started (the kube-apiserver of the
// integration tier, the binary the CLI tests build) in either tier.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// shipped is where the adapters HyperFleet ships live; e2eAdapters,
// upstream's end-to-end adapters (absent without the compat files).
const shipped = "../../taskconfigs"

var e2eAdapters = compat.Path("upstream-e2e-adapters")
