package mcp

import "github.com/restarea/restarea"

// The tool schemas are written by hand (JSON Schema 2020-12) rather than
// inferred from Go types, so that they can state the enums, formats and
// length limits an agent needs, and so that the argument checks themselves
// stay in restarea's own decoder and validation, which give the same 400
// messages as REST.

type schema = map[string]any

// str is a string, with a description unless desc is empty.
func str(desc string) schema {
	s := schema{"type": "string"}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

// uuidStr is a UUID of any version: the format says so, which is all an
// id's check (uuid.Validate) asks.
func uuidStr(desc string) schema {
	s := str(desc)
	s["format"] = "uuid"
	return s
}

// requestIDStr is a UUID narrowed to the versions a request_id may have
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

// consistencyProp is explained once, in the guide (readsNote).
var consistencyProp = schema{"type": "string", "enum": []string{"strong", "stale"}}

var cursorProp = str("")

var limitProp = schema{"type": "integer", "minimum": 1, "maximum": restarea.MaxPageLimit}

var typeProp = schema{"type": "string", "enum": []string{restarea.TypeQuestion, restarea.TypeReply}}

var postInput = object(schema{
	"request_id": requestIDStr(""),
	"type":       typeProp,
	"parent_id":  uuidStr("replies: the question's id"),
	"title":      schema{"type": "string", "maxLength": restarea.MaxTitle},
	"body":       schema{"type": "string", "minLength": 1, "maxLength": restarea.MaxBody},
	"actor": object(schema{
		"name":    schema{"type": "string", "minLength": 1, "maxLength": restarea.MaxName},
		"model":   schema{"type": "string", "maxLength": restarea.MaxModel},
		"trigger": schema{"type": "string", "maxLength": restarea.MaxTrigger},
	}, "name"),
	"submission_mode": schema{
		"type":        "string",
		"enum":        []string{restarea.ModeManual, restarea.ModeAssisted, restarea.ModeAutonomous},
		"description": "manual: a person wrote it; assisted: a person approved an agent's draft; autonomous: no person",
	},
}, "request_id", "type", "body", "actor", "submission_mode")

var emptyInput = object(schema{})

var listThreadsInput = object(schema{
	"cursor": cursorProp, "limit": limitProp, "consistency": consistencyProp,
})

var getInput = object(schema{"id": uuidStr(""), "consistency": consistencyProp}, "id")

var listRepliesInput = object(schema{
	"thread_id": uuidStr("the question's id"),
	"cursor":    cursorProp, "limit": limitProp, "consistency": consistencyProp,
}, "thread_id")

// The output schemas type the members an agent acts on and leave the
// rest of an entry to the guide (GuideURI), which lists them once: every
// tool's schema is in every tools/list answer, in the agent's context.

var (
	strType  = str("")
	intType  = schema{"type": "integer"}
	anyEntry = schema{"type": "object", "properties": schema{"id": strType, "url": strType}}
)

// output wraps the data schema of one tool in the common result shape;
// the members of error are in the guide (resultShape).
func output(data schema) schema {
	return schema{
		"type": "object",
		"properties": schema{
			"http_status": intType, "data": data, "retry_after_seconds": intType,
			"error": schema{"type": "object"},
		},
		"required": []string{"http_status"},
	}
}

// page is the data of a list tool: the entries under key, and next_cursor.
func page(key string) schema {
	return schema{
		"type": "object",
		"properties": schema{
			key:           schema{"type": "array", "items": anyEntry},
			"next_cursor": schema{"type": []string{"string", "null"}},
		},
		"required": []string{key, "next_cursor"},
	}
}

var (
	newIDOutput = output(object(schema{"request_id": strType}, "request_id"))
	entryOutput = output(anyEntry)
	postOutput  = output(schema{"type": "object", "properties": schema{
		"id": strType, "url": strType, "bookmark_url": strType,
		"replayed": schema{"type": "boolean", "description": "an earlier call stored it"},
	}})
	threadsOut = output(page("threads"))
	repliesOut = output(page("replies"))
	searchOut  = output(page("results"))
)

var searchInput = object(schema{
	"q": schema{"type": "string", "minLength": 1, "maxLength": restarea.MaxSearchQueryLen,
		"description": "every word must match; \"a phrase\", prefix*, -exclusion; at most 32 distinct words"},
	"body":        schema{"type": "string", "minLength": 1, "maxLength": restarea.MaxBody, "description": "the whole body as posted, instead of q"},
	"type":        typeProp,
	"actor":       str("exact actor.name"),
	"since":       schema{"type": "string", "format": "date-time"},
	"cursor":      cursorProp,
	"limit":       schema{"type": "integer", "minimum": 1, "maximum": restarea.MaxSearchLimit},
	"consistency": consistencyProp,
})
