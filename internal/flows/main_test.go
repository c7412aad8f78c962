package flows

import (
	"testing"

	"github.com/exqgo/exq/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
