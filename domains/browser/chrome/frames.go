package chrome

import (
	"context"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// Cross-site frames.
//
// Chromium runs a frame of another site in its own renderer process (site
// isolation stays on), which the page's target does not reach: its
// accessibility tree, its nodes and its scripts belong to a target of
// type "iframe" whose id is the frame's id. A live tab attaches to such a
// frame when it reads the page (readFrames) and keeps the attachment
// while the frame lives. The frame's requests go through the session's
// gate like every other target of its browser context, so its host is
// held to the allow-list: a frame of a host that is not allowed never
// loads, and has no fields.

// frameTarget is a cross-site frame of a live tab, attached.
type frameTarget struct {
	ctx    context.Context
	cancel context.CancelFunc
	// owner is the frame's element in the document that holds it.
	owner pageNode
}

// attachFrame attaches to the cross-site frame id of lt's page (once; its
// element is owner) and returns it, or nil when it cannot be attached.
func (lt *liveTab) attachFrame(op context.Context, id string, owner pageNode) *frameTarget {
	if ft := lt.frames[id]; ft != nil && ft.ctx.Err() == nil {
		ft.owner = owner
		return ft
	}
	if lt.frames == nil {
		lt.frames = map[string]*frameTarget{}
	}
	if len(lt.frames) >= maxFrames {
		// Frames of earlier pages: forget the ones that ended.
		for k, ft := range lt.frames {
			if ft.ctx.Err() != nil {
				delete(lt.frames, k)
			}
		}
		if len(lt.frames) >= maxFrames {
			return nil
		}
	}
	ctx, cancel := chromedp.NewContext(lt.t.ctx, chromedp.WithTargetID(target.ID(id)))
	actx, done := context.WithTimeout(op, inspectMax)
	defer done()
	attached := make(chan error, 1)
	go func() { attached <- chromedp.Do(ctx) }()
	select {
	case err := <-attached:
		if err != nil {
			cancel()
			return nil
		}
	case <-actx.Done():
		cancel()
		<-attached
		return nil
	}
	ft := &frameTarget{ctx: ctx, cancel: cancel, owner: owner}
	lt.frames[id] = ft
	return ft
}

// frameOffsetJS returns where the content of the frame element it is
// called on starts in its own viewport, scrolled into view.
const frameOffsetJS = `function() {
  this.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const r = this.getBoundingClientRect(), cs = getComputedStyle(this);
  return {x: r.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft),
          y: r.top + parseFloat(cs.borderTopWidth) + parseFloat(cs.paddingTop)};
}`

// frameAt returns the context of the cross-site frame id of lt and the
// offset of its content in the page's viewport.
func (lt *liveTab) frameAt(op context.Context, id string) (context.Context, point, bool) {
	ft := lt.frames[id]
	if ft == nil || ft.ctx.Err() != nil {
		return nil, point{}, false
	}
	owner, err := resolveNode(op, lt, ft.owner, "frame")
	if err != nil || owner == nil {
		return nil, point{}, false
	}
	off, err := callOn[point](owner, frameOffsetJS)
	if err != nil {
		return nil, point{}, false
	}
	// The frame element's own frame (when it is in a frame itself).
	off.X += owner.frame.X
	off.Y += owner.frame.Y
	if owner.op == op {
		// Same-site frames around the frame element.
		outer, err := callOn[point](owner, `function() {
  let x = 0, y = 0;
  try {
    for (let w = this.ownerDocument.defaultView; w && w.frameElement; w = w.parent) {
      const f = w.frameElement, fr = f.getBoundingClientRect(), cs = w.parent.getComputedStyle(f);
      x += fr.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft);
      y += fr.top + parseFloat(cs.borderTopWidth) + parseFloat(cs.paddingTop);
    }
  } catch (e) {}
  return {x, y};
}`)
		if err == nil {
			off.X += outer.X
			off.Y += outer.Y
		}
	}
	return ft.ctx, off, true
}

// closeFrames detaches lt's cross-site frames.
func (lt *liveTab) closeFrames() {
	for k, ft := range lt.frames {
		ft.cancel()
		delete(lt.frames, k)
	}
}
