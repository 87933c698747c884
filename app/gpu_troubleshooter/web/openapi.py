"""The OpenAPI 3.1 description of /api/v1 (the Diagnosis schema mirrors docs/engine-api.md)."""

_TEXT_LOG = {"text/plain": {"schema": {"type": "string"}},
             "application/gzip": {"schema": {"type": "string", "format": "binary"}},
             "application/json": {"schema": {"$ref": "#/components/schemas/LogJson"}},
             "multipart/form-data": {"schema": {"$ref": "#/components/schemas/LogUpload"}}}


def _err(desc):
    return {"description": desc, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _ok(desc, ref):
    return {"description": desc, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


SCHEMAS = {
    "Error": {"type": "object", "required": ["error", "message"],
              "properties": {"error": {"type": "string"}, "message": {"type": "string"}}},
    "LogJson": {"type": "object", "required": ["log"],
                "properties": {"log": {"type": "string"}, "facts": {"type": ["object", "null"]}}},
    "LogUpload": {"type": "object", "properties": {
        "log": {"type": "string", "format": "binary", "description": "the log, plain or gzip"},
        "facts": {"type": "string", "format": "binary", "description": "the probe's facts JSON"}}},
    "Finding": {"type": "object", "required": ["id", "title", "confidence", "evidence", "fixes"], "properties": {
        "id": {"type": "string"}, "title": {"type": "string"}, "summary": {"type": "string"},
        "severity": {"type": "string"}, "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "evidence": {"type": "array", "items": {"type": "object", "required": ["line", "text"], "properties": {
            "line": {"type": "integer"}, "text": {"type": "string"}}}},
        "values": {"type": "object", "additionalProperties": {"type": ["string", "null"]}},
        "causes": {"type": "array", "items": {"type": "string"}},
        "fixes": {"type": "array", "items": {"type": "object", "properties": {
            "title": {"type": "string"}, "text": {"type": "string"},
            "code": {"type": ["object", "null"], "properties": {"lang": {"type": "string"}, "text": {"type": "string"}}}}}},
        "references": {"type": "array", "items": {"type": "object"}},
        "facts": {"type": ["object", "null"]},
        "fallback_fields": {"type": "array", "items": {"type": "string"},
                            "description": "fields shown in another language than `lang` (untranslated or stale)"}}},
    "Diagnosis": {"type": "object", "required": ["schema", "findings"], "properties": {
        "schema": {"const": 1}, "source": {"type": ["string", "null"]},
        "lines": {"type": "integer"}, "bytes": {"type": "integer"},
        "findings": {"type": "array", "items": {"$ref": "#/components/schemas/Finding"}},
        "scheduler": {"type": ["string", "null"]},
        "lang": {"type": "string"}, "fallback_fields": {"type": "array", "items": {"type": "string"}},
        "key_lines": {"type": "array", "description": "the lines that most likely ended the job (when no entry knows it, and other errors)",
                      "items": {"type": "object", "required": ["line", "text", "kind"], "properties": {
                          "line": {"type": "integer"}, "text": {"type": "string"}, "kind": {"type": "string"},
                          "origin": {"type": "string"}, "exception": {"type": ["string", "null"]},
                          "package": {"type": ["string", "null"]}, "frame": {"type": ["string", "null"]}}}},
        "harmless": {"type": "array", "description": "known harmless look-alikes of errors (TensorFlow start-up noise ...): not failures",
                     "items": {"type": "object", "required": ["id", "title", "evidence"], "properties": {
                         "id": {"type": "string"}, "title": {"type": "string"}, "summary": {"type": "string"},
                         "evidence": {"type": "array", "items": {"type": "object"}}}}},
        "facts": {"type": ["object", "null"]}}},
    "Submission": {"type": "object", "required": ["token", "url", "state"], "properties": {
        "token": {"type": ["string", "null"], "description": "the share token: only to whoever holds it (staff listings show null)"},
        "url": {"type": ["string", "null"]}, "api_url": {"type": ["string", "null"]},
        "created_at": {"type": "string"}, "source": {"type": "string"},
        "state": {"enum": ["processing", "done", "error"]},
        "failure_class": {"type": ["string", "null"]}, "confidence": {"type": "number"},
        "cluster": {"type": ["string", "null"]}, "partition": {"type": ["string", "null"]},
        "progress": {"type": "object"}, "error": {"type": "string"},
        "ticket": {"type": ["object", "null"]},
        "diagnosis": {"oneOf": [{"$ref": "#/components/schemas/Diagnosis"}, {"type": "null"}]},
        "facts": {"type": ["object", "null"]}, "evidence_context": {"type": ["array", "null"]}}},
    "KbEntry": {"type": "object", "required": ["id", "title"], "properties": {
        "id": {"type": "string"}, "area": {"type": "string"}, "title": {"type": "string"},
        "summary": {"type": "string"}, "tags": {"type": "array"}, "severity": {"type": "string"},
        "causes": {"type": "array"}, "fixes": {"type": "array"}, "score": {"type": "number"}}},
    "Ticket": {"type": "object", "required": ["id", "status", "submission"], "properties": {
        "id": {"type": "integer"}, "status": {"enum": ["new", "in_progress", "waiting_for_user", "resolved"]},
        "assignee": {"type": ["string", "null"]}, "contact": {"type": "string"}, "message": {"type": "string"},
        "submission": {"$ref": "#/components/schemas/Submission"}, "notes": {"type": "array"}}},
}


def spec():
    staff = [{"staffToken": []}]
    ticket_id = [{"name": "ticket_id", "in": "path", "required": True, "schema": {"type": "integer"}}]
    token = [{"name": "token", "in": "path", "required": True, "schema": {"type": "string"}}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "HPC GPU troubleshooter", "version": "1",
                 "description": "Diagnose failed GPU jobs from their logs. Logs are redacted before "
                                "anything is stored or diagnosed."},
        "servers": [{"url": "/api/v1"}],
        "paths": {
            "/diagnose": {"post": {
                "summary": "Diagnose a log without storing it (same JSON as `troubleshoot --json`)",
                "requestBody": {"required": True, "content": _TEXT_LOG},
                "responses": {"200": _ok("the diagnosis", "Diagnosis"), "400": _err("no log"),
                              "413": _err("too large"), "422": _err("unreadable log"),
                              "429": _err("rate limited")}}},
            "/submissions": {"post": {
                "summary": "Store a submission; large logs answer 202 and are scanned in the background",
                "requestBody": {"required": True, "content": _TEXT_LOG},
                "responses": {"201": _ok("stored and diagnosed", "Submission"),
                              "202": _ok("stored, being scanned: poll api_url", "Submission"),
                              "400": _err("no log"), "413": _err("too large"), "429": _err("rate limited")}}},
            "/submissions/{token}": {"get": {
                "summary": "Read a submission by its unguessable token", "parameters": token,
                "responses": {"200": _ok("the submission", "Submission"), "404": _err("unknown token")}}},
            "/submissions/{token}/ticket": {"post": {
                "summary": "Send the submission to the helpdesk", "parameters": token,
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                    "contact": {"type": "string"}, "message": {"type": "string"}}}}}},
                "responses": {"201": {"description": "the ticket's id and status"}, "404": _err("unknown token")}}},
            "/submissions/{token}/feedback": {"post": {
                "summary": "Did the answer fix it? (verdict fixed | not_fixed | wrong_diagnosis; comment is redacted)",
                "parameters": token,
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["verdict"], "properties": {
                        "verdict": {"type": "string", "enum": ["fixed", "not_fixed", "wrong_diagnosis"]},
                        "fix": {"type": "integer", "minimum": 1}, "comment": {"type": "string"}}}}}},
                "responses": {"201": {"description": "stored"}, "400": _err("bad input"), "404": _err("unknown token"),
                              "409": _err("still scanning")}}},
            "/unknown": {"get": {
                "summary": "Unknown failures grouped by the template of their key line (staff)", "security": staff,
                "responses": {"200": {"description": "groups, largest first"}, "401": _err("no valid token")}}},
            "/outages": {"get": {
                "summary": "Nodes with a burst of failed jobs in the outage window (staff)", "security": staff,
                "responses": {"200": {"description": "outages"}, "401": _err("no valid token")}}},
            "/kb": {"get": {
                "summary": "List the knowledge base; `q` searches it fuzzily",
                "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "entries", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"entries": {"type": "array", "items": {
                        "$ref": "#/components/schemas/KbEntry"}}}}}}}}}},
            "/kb/{entry_id}": {"get": {
                "summary": "One knowledge-base entry",
                "parameters": [{"name": "entry_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": _ok("the entry", "KbEntry"), "404": _err("unknown entry")}}},
            "/tickets": {"get": {
                "summary": "Tickets, newest first (staff)", "security": staff,
                "parameters": [{"name": n, "in": "query", "schema": {"type": "string"}}
                               for n in ("status", "class", "limit")],
                "responses": {"200": {"description": "tickets"}, "401": _err("no valid token")}}},
            "/tickets/{ticket_id}": {
                "get": {"summary": "One ticket with its notes (staff)", "security": staff, "parameters": ticket_id,
                        "responses": {"200": _ok("the ticket", "Ticket"), "401": _err("no valid token"),
                                      "404": _err("unknown ticket")}},
                "patch": {"summary": "Change status / assignee, optionally add a note (staff)",
                          "security": staff, "parameters": ticket_id,
                          "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                              "status": {"type": "string"}, "assignee_id": {"type": "integer"},
                              "note": {"type": "string"}}}}}},
                          "responses": {"200": _ok("the ticket", "Ticket"), "400": _err("bad input"),
                                        "401": _err("no valid token")}}},
            "/tickets/{ticket_id}/notes": {"post": {
                "summary": "Add an internal note (staff)", "security": staff, "parameters": ticket_id,
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["text"],
                                                                             "properties": {"text": {"type": "string"}}}}}},
                "responses": {"201": _ok("the ticket", "Ticket"), "401": _err("no valid token")}}},
        },
        "components": {"schemas": SCHEMAS, "securitySchemes": {"staffToken": {
            "type": "http", "scheme": "bearer",
            "description": "create one with `troubleshoot staff token NAME`"}}},
    }
