package knowledge

// Schemas are the OpenAPI components the knowledge routes name.
func Schemas() map[string]any {
	str := map[string]any{"type": "string"}
	uuid := map[string]any{"type": "string", "format": "uuid"}
	i64 := map[string]any{"type": "integer", "format": "int64"}
	dt := map[string]any{"type": "string", "format": "date-time"}
	ids := map[string]any{"type": "array", "items": uuid, "maxItems": 100}
	obj := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	doc := obj(map[string]any{"id": uuid, "name": str, "source_type": map[string]any{"type": "string", "enum": []string{"text", "file"}},
		"original_filename": str, "mime_type": map[string]any{"type": "string", "enum": []string{mimeText, mimeMarkdown, mimeCSV, mimePDF, mimeDOCX}},
		"byte_count": i64, "estimated_chunk_count": i64, "status": map[string]any{"type": "string", "enum": statuses}, "error": str,
		"chunk_count": i64, "created_at": dt, "updated_at": dt})
	warning := obj(map[string]any{"document_id": uuid, "duplicate_document_ids": ids, "message": str})
	return map[string]any{
		"KnowledgeDocument": doc,
		"KnowledgeDocumentDetail": map[string]any{"allOf": []any{ref("KnowledgeDocument"), obj(map[string]any{"content": str,
			"uploaded_by":   map[string]any{"oneOf": []any{obj(map[string]any{"id": i64, "name": str, "email": str}), map[string]any{"type": "null"}}},
			"source_origin": map[string]any{"type": "string", "enum": []string{"upload", "google_drive"}}, "replaced_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time"},
			"has_original": map[string]any{"type": "boolean"}, "original_size_bytes": i64, "original_mime_type": str})}},
		"KnowledgeTextInput": map[string]any{"description": "JSON {name, content}; or multipart/form-data with files[] parts (or one file part and an optional name part). Text types up to 1 MB, PDF and Word up to 50 MB.",
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 255}, "content": map[string]any{"type": "string", "minLength": 1}}, "required": []string{"name", "content"}},
		"KnowledgeDocumentPatch": map[string]any{"description": "JSON {name?, content?} (content for text documents), or multipart/form-data with a file part.",
			"type": "object", "properties": map[string]any{"name": str, "content": str}},
		"KnowledgeDriveImport": map[string]any{"description": "Files chosen in Google Drive (as the Google Picker returns them) and the user's short-lived OAuth access token with drive.readonly or drive.file scope. Each file's type comes from Drive (files.get): Google Docs are exported as text/plain, Google Sheets as text/csv, .txt/.md/.csv/.pdf/.docx files are downloaded; then every file is checked as an upload is, and one bad file fails the request. A token Drive refuses is a 400 on access_token; Drive failing is 502, Drive rate limiting 503.",
			"type": "object", "required": []string{"access_token", "files"}, "properties": map[string]any{"access_token": map[string]any{"type": "string", "minLength": 1, "maxLength": 4096},
				"files": map[string]any{"type": "array", "minItems": 1, "maxItems": 20, "items": obj(map[string]any{"id": str, "name": str, "mimeType": str}, "id")}}},
		"KnowledgeFileInput":     map[string]any{"description": "multipart/form-data with one file part (and an optional name part); JSON is not accepted.", "type": "object"},
		"KnowledgeUploadResult":  obj(map[string]any{"documents": map[string]any{"type": "array", "items": ref("KnowledgeDocumentDetail")}, "warnings": map[string]any{"type": "array", "items": warning}}, "documents", "warnings"),
		"KnowledgeReplaceResult": obj(map[string]any{"document": ref("KnowledgeDocumentDetail"), "warnings": map[string]any{"type": "array", "items": warning}}, "document", "warnings"),
		"KnowledgeOriginalURL":   obj(map[string]any{"url": str, "expires_in": map[string]any{"type": "integer", "description": "seconds"}}, "url", "expires_in"),
		"KnowledgeSearchInput": obj(map[string]any{"query": map[string]any{"type": "string", "minLength": 1, "maxLength": 1000},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50, "default": 5}, "knowledge_base_ids": ids, "document_ids": ids}, "query"),
		"KnowledgeSearchResult": obj(map[string]any{"mode": map[string]any{"type": "string", "enum": []string{"bm25", "hybrid"},
			"description": "hybrid: BM25 and vector search fused by reciprocal rank (an embeddings provider is configured); bm25: BM25 alone (none is, or it failed for this query)"}, "query": str,
			"results": map[string]any{"type": "array", "items": obj(map[string]any{"document_id": uuid, "document_name": str, "position": i64,
				"context": str, "text": str, "score": map[string]any{"type": "number", "description": "higher is better; compare within one response (BM25 rank score in bm25 mode, reciprocal rank fusion score in hybrid mode)"}})}}, "mode", "results"),
		"KnowledgeBase":       obj(map[string]any{"id": uuid, "name": str, "description": str, "document_count": i64, "created_at": dt, "updated_at": dt}),
		"KnowledgeBaseInput":  obj(map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 255}, "description": map[string]any{"type": "string", "maxLength": 2000}}),
		"KnowledgeBaseAttach": map[string]any{"description": "{document_ids} attaches existing documents; an upload body (as POST /v1/knowledge/documents) creates and attaches them.", "type": "object", "properties": map[string]any{"document_ids": ids, "document_id": uuid, "name": str, "content": str}},
	}
}
