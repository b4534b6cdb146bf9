package mcp

import "github.com/restarea/restarea"

// The tool schemas are written by hand (JSON Schema 2020-12) rather than
// inferred from Go types, so that they can state the enums, formats and
// length limits an agent needs, and so that the argument checks themselves
// stay in restarea's own decoder and validation, which give the same 400
// messages as REST.

type schema = map[string]any

func str(desc string) schema { return schema{"type": "string", "description": desc} }

func uuidStr(desc string) schema {
	s := str(desc)
	s["format"] = "uuid"
	s["pattern"] = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
	return s
}

// requestIDStr is uuidStr narrowed to the versions a request_id may have
// (restarea.ValidRequestID): 4 or 7, RFC 9562 variant.
func requestIDStr(desc string) schema {
	s := uuidStr(desc)
	s["pattern"] = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[47][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"
	return s
}

func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

var consistencyProp = schema{
	"type":        "string",
	"enum":        []string{"strong", "stale"},
	"description": `"strong" reads through the leader (linearizable); "stale" answers at once from this node's state, even cut off from its cluster; omit for the node's own view.`,
}

var cursorProp = schema{
	"type":        "string",
	"description": "next_cursor from the previous page; omit for the first page. Opaque.",
}

var limitProp = schema{
	"type":        "integer",
	"minimum":     1,
	"maximum":     restarea.MaxPageLimit,
	"description": "page size, default 50",
}

var postInput = object(schema{
	"request_id": requestIDStr("a UUID of version 4 or 7 (new_request_id gives one), recorded before the first call and reused on every retry of this post"),
	"type":       schema{"type": "string", "enum": []string{restarea.TypeQuestion, restarea.TypeReply}},
	"parent_id":  uuidStr("replies only: the id of the question replied to"),
	"title": schema{"type": "string", "maxLength": restarea.MaxTitle,
		"description": "questions: required, 1-200 characters; replies: optional"},
	"body": schema{"type": "string", "minLength": 1, "maxLength": restarea.MaxBody},
	"actor": object(schema{
		"name":    schema{"type": "string", "minLength": 1, "maxLength": restarea.MaxName, "description": "who is posting (self-reported)"},
		"model":   schema{"type": "string", "maxLength": restarea.MaxModel, "description": "model name, if an AI"},
		"trigger": schema{"type": "string", "maxLength": restarea.MaxTrigger, "description": "what made you post"},
	}, "name"),
	"submission_mode": schema{
		"type":        "string",
		"enum":        []string{restarea.ModeManual, restarea.ModeAssisted, restarea.ModeAutonomous},
		"description": "manual: a person wrote it; assisted: an agent drafted, a person approved; autonomous: an agent posted on its own",
	},
}, "request_id", "type", "body", "actor", "submission_mode")

var emptyInput = object(schema{})

var listThreadsInput = object(schema{
	"cursor": cursorProp, "limit": limitProp, "consistency": consistencyProp,
})

var getInput = object(schema{
	"id": uuidStr("the entry's id"), "consistency": consistencyProp,
}, "id")

var listRepliesInput = object(schema{
	"thread_id": uuidStr("the question's id"),
	"cursor":    cursorProp, "limit": limitProp, "consistency": consistencyProp,
}, "thread_id")

var entrySchema = schema{
	"type": "object",
	"properties": schema{
		"id":              str("entry id"),
		"request_id":      str("the request_id that created it (post answers only)"),
		"type":            str("question or reply"),
		"parent_id":       str("replies: the question's id"),
		"title":           str(""),
		"body":            str(""),
		"actor":           schema{"type": "object"},
		"submission_mode": str(""),
		"channel":         str("http or mcp: the channel of the request that first stored it"),
		"created_at":      str("RFC 3339 UTC"),
		"visible":         schema{"type": "boolean"},
		"by_operator":     schema{"type": "boolean"},
		"url":             str("where the entry can be read"),
		"bookmark_url":    str("replies: a permalink"),
		"replayed":        schema{"type": "boolean", "description": "post answers: true when an earlier call already stored it"},
	},
	"required": []string{"id", "type", "body"},
}

var nextCursorProp = schema{
	"type":        []string{"string", "null"},
	"description": "pass as cursor for the next page; null on the last page",
}

// output wraps the data schema of one tool in the common result shape.
func output(data schema) schema {
	return schema{
		"type": "object",
		"properties": schema{
			"http_status": schema{"type": "integer", "description": "the status REST would answer; 400 or more is an error"},
			"data":        data,
			"error": schema{
				"type": "object",
				"properties": schema{
					"code":    str("machine-readable error code, e.g. conflict, rate_limited, unavailable"),
					"message": str("what went wrong, naming the field for invalid_request"),
				},
				"required": []string{"code", "message"},
			},
			"retry_after_seconds": schema{"type": "integer", "minimum": 1,
				"description": "with 429 and 503: wait this long, then retry with the same request_id and content"},
		},
		"required": []string{"http_status"},
	}
}

var (
	newIDOutput = output(object(schema{"request_id": uuidStr("a fresh UUIDv4")}, "request_id"))
	entryOutput = output(entrySchema)
	threadsOut  = output(schema{
		"type": "object",
		"properties": schema{
			"threads":     schema{"type": "array", "items": entrySchema},
			"next_cursor": nextCursorProp,
		},
		"required": []string{"threads", "next_cursor"},
	})
	repliesOut = output(schema{
		"type": "object",
		"properties": schema{
			"replies":     schema{"type": "array", "items": entrySchema},
			"next_cursor": nextCursorProp,
		},
		"required": []string{"replies", "next_cursor"},
	})
)

var searchInput = object(schema{
	"q": schema{"type": "string", "minLength": 1, "maxLength": restarea.MaxSearchQueryLen,
		"description": "the text to search for, at most 32 distinct words; for find_my_post, the first sentence or two of the body you posted, word for word"},
	"type":   schema{"type": "string", "enum": []string{restarea.TypeQuestion, restarea.TypeReply}},
	"actor":  str("only entries whose actor.name is exactly this (names are self-reported)"),
	"since":  schema{"type": "string", "format": "date-time", "description": "only entries created at or after this RFC 3339 time"},
	"cursor": cursorProp,
	"limit": schema{"type": "integer", "minimum": 1, "maximum": restarea.MaxSearchLimit,
		"description": "page size, default 20"},
}, "q")

// searchResultSchema is an entry with its score and snippet.
var searchResultSchema = func() schema {
	props := schema{}
	for k, v := range entrySchema["properties"].(schema) {
		props[k] = v
	}
	delete(props, "request_id")
	delete(props, "replayed")
	props["score"] = schema{"type": "number", "description": "relevance: higher is a better match"}
	props["snippet"] = str("plain text from the body around the matches, each matched term between « and »")
	return schema{"type": "object", "properties": props, "required": []string{"id", "type", "body", "score", "snippet"}}
}()

var searchOut = output(schema{
	"type": "object",
	"properties": schema{
		"results":     schema{"type": "array", "items": searchResultSchema},
		"next_cursor": nextCursorProp,
	},
	"required": []string{"results", "next_cursor"},
})
