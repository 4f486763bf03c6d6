package charm

// Pending is a result computed beside a hook's other work (a read, a service's start), which
// the hook waits for before it ends, so that nothing it started runs past it. Wait returns the
// result once it is there, as often as asked; a nil Pending is done, with T's zero value.
type Pending[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// Start runs f in the background; the returned Pending's Wait gives its result.
func Start[T any](f func() (T, error)) *Pending[T] {
	p := &Pending[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.v, p.err = f()
	}()
	return p
}

// Wait waits until the function Start ran has returned, and returns what it returned.
func (p *Pending[T]) Wait() (T, error) {
	if p == nil {
		var zero T
		return zero, nil
	}
	<-p.done
	return p.v, p.err
}
