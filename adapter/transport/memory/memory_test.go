package memory

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/adapter/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, transporttest.Suite{Transport: New(nil), Object: transporttest.ConfigMaps("default")})
}
