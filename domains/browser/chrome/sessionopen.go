package chrome

// SessionOpen reports whether a live session of that id is open in this
// browser (whoever owns it): the rules offer the tools of a session the
// client names only when it is (a session that ended, or lives on
// another replica, answered x-browser_session_gone only at invoke).
func (b *Browser) SessionOpen(id string) bool {
	b.sess.mu.Lock()
	defer b.sess.mu.Unlock()
	_, ok := b.sess.m[id]
	return ok
}
