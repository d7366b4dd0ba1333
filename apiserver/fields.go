package apiserver

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/projection"
)

// fieldsKey holds the request's parsed fields= (a *projection.Projection).
const fieldsKey = "hyperfleet.fields"

// getProjectable registers a GET of resources (one or a list) that takes
// fields=.
func (s *Server) getProjectable(g *gin.RouterGroup, path string, h gin.HandlerFunc) {
	if s.fieldRoutes == nil {
		s.fieldRoutes = map[string]bool{}
	}
	s.fieldRoutes[g.BasePath()+path] = true
	g.GET(path, h)
}

// checkFields reads fields= on the routes that take it, and refuses it on
// every other one, where it would be silently ignored: a client asking a
// write or a status list for a few fields expects them.
func (s *Server) checkFields(c *gin.Context) {
	values, ok := c.GetQueryArray("fields")
	if !ok {
		c.Next()
		return
	}
	if c.Request.Method != http.MethodGet || !s.fieldRoutes[c.FullPath()] {
		s.fail(c, problem.InvalidParameter("fields", problem.Truncate(values[0], 200),
			"fields selects the fields of resources; only GETs of a resource or a list of resources take it, not "+
				c.Request.Method+" "+problem.Truncate(c.FullPath(), maxEchoedPath)))
		return
	}
	if len(values) > 1 {
		s.fail(c, problem.InvalidParameter("fields", problem.Truncate(values[1], 200),
			"fields is sent more than once; send it once, comma-separated: fields=id,name,status.conditions"))
		return
	}
	p, err := projection.Parse(values[0], projection.Resource)
	if err != nil {
		var entry string
		if pe := (*projection.Error)(nil); errors.As(err, &pe) {
			entry = pe.Entry
		}
		s.fail(c, problem.InvalidParameter("fields", problem.Truncate(entry, 200), err.Error()))
		return
	}
	c.Set(fieldsKey, p)
	c.Next()
}

// projectionOf is the request's fields=, nil without one.
func projectionOf(c *gin.Context) *projection.Projection {
	if v, ok := c.Get(fieldsKey); ok {
		return v.(*projection.Projection)
	}
	return nil
}
