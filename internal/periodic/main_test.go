package periodic

import (
	"testing"

	"github.com/exqgo/exq/internal/testutil"
)

func TestMain(m *testing.M) { testutil.MainLeak(m) }
