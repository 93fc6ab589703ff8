package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/upstream"
)

// shape turns an upstream result into the text a model reads: the text
// items, embedded text resources, resource links and, for media, a note of
// their type and size (their data is not passed on); the structured
// content only when there is no text. The text is cut at max bytes;
// truncated says so and total is the length before the cut.
func shape(res *mcp.CallToolResult, max int) (text string, truncated bool, total int) {
	var b strings.Builder
	add := func(s string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if b.Len() <= 4*max { // count the rest without keeping it
			b.WriteString(s)
		} else {
			total += len(s)
		}
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			add(c.Text)
		case *mcp.ImageContent:
			add(fmt.Sprintf("[image %s, %d bytes, not shown]", upstream.Truncate(c.MIMEType, 40), len(c.Data)))
		case *mcp.AudioContent:
			add(fmt.Sprintf("[audio %s, %d bytes, not shown]", upstream.Truncate(c.MIMEType, 40), len(c.Data)))
		case *mcp.ResourceLink:
			add(fmt.Sprintf("[resource %s]", upstream.Truncate(c.URI, 200)))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				add(c.Resource.Text)
			} else if c.Resource != nil {
				add(fmt.Sprintf("[resource %s, %d bytes, not shown]", upstream.Truncate(c.Resource.URI, 200), len(c.Resource.Blob)))
			}
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			add(string(raw))
		}
	}
	text = b.String()
	total += len(text)
	if len(text) > max {
		note := fmt.Sprintf("\n[cut: %d of %d bytes shown]", max, total)
		text = upstream.Truncate(text, max) + note
		truncated = true
	}
	return text, truncated, total
}
