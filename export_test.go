package topic

// Guard exposes the publish guard to the benchmarks, so that its cost can be
// shown beside a raw channel send.
type Guard = guard

// NewGuard returns a guard as a broker makes one.
func NewGuard() *Guard { return newGuard() }

// EnterExit enters and leaves g, as one publication does.
func (g *guard) EnterExit() { g.exit(g.enter()) }
