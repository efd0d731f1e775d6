package claude

import (
	"encoding/json"
	"errors"
)

// Structured results (UserMessage.ToolUseResult) of the built-in tools,
// for DecodeToolUseResult. Most are generated (tools_result_gen.go) from
// the TypeScript SDK's sdk-tools.d.ts by internal/sdkgen; those here are
// unions Go decodes with code of its own (the Read, Projects and
// Artifact results, keeping the whole result in Raw) and the items of a
// WebSearch result, which come in two forms. The results the real-CLI
// tests produce offline are checked against what the CLIs send; the
// others follow the declarations.

// ReadResult is the structured result of the Read tool. Type is "text"
// for a text file (File set); images, PDFs and notebooks have other
// types, whose data is in Raw.
type ReadResult struct {
	Type string          `json:"type"`
	File *ReadResultFile `json:"file"`
	// ArtifactRead names the artifact a "text" read came from (slug and
	// version), when it was one.
	ArtifactRead *struct {
		Slug string `json:"slug"`
		Ver  string `json:"ver"`
	} `json:"artifactRead,omitempty"`
	// FirstPage and Pages are a "parts" read's page images: the number of
	// the first page, and each page's image (or its error).
	FirstPage int        `json:"firstPage,omitempty"`
	Pages     []ReadPage `json:"pages,omitempty"`
	// Raw is the whole result, for the types other than "text".
	Raw json.RawMessage `json:"-"`
}

// ReadResultFile is the text a Read returned.
type ReadResultFile struct {
	FilePath   string `json:"filePath"`
	Content    string `json:"content"`
	NumLines   int    `json:"numLines"`
	StartLine  int    `json:"startLine"`
	TotalLines int    `json:"totalLines"`
	// TruncatedByTokenCap is set when a whole-file read was cut to its
	// first page.
	TruncatedByTokenCap bool `json:"truncatedByTokenCap,omitempty"`
}

// ReadPage is one page image of a "parts" ReadResult.
type ReadPage struct {
	Base64    string `json:"base64"`
	MediaType string `json:"mediaType"`
	Error     string `json:"error,omitempty"`
}

// UnmarshalJSON decodes the result, keeping it whole in Raw.
func (r *ReadResult) UnmarshalJSON(b []byte) error {
	type plain ReadResult
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		// Not text: the file member has another shape.
		var t struct {
			Type      string     `json:"type"`
			FirstPage int        `json:"firstPage"`
			Pages     []ReadPage `json:"pages"`
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		*r = ReadResult{Type: t.Type, FirstPage: t.FirstPage, Pages: t.Pages}
	} else {
		*r = ReadResult(p)
		if r.Type != "text" {
			r.File = nil
		}
	}
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// WebSearchResultItem is the hits of one search (ToolUseID and Hits
// set) or a piece of commentary (Text set).
type WebSearchResultItem struct {
	ToolUseID string
	Hits      []WebSearchHit
	Text      string
}

// WebSearchHit is one hit of a search.
type WebSearchHit struct {
	Title string `json:"title"`
	URL   string `json:"url"`
	// Snippet is the page text: PostToolUse hooks get it, the
	// tool_use_result does not.
	Snippet string `json:"snippet,omitempty"`
}

// UnmarshalJSON decodes either form of a result item.
func (it *WebSearchResultItem) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*it = WebSearchResultItem{}
		return json.Unmarshal(b, &it.Text)
	}
	var w struct {
		ToolUseID string         `json:"tool_use_id"`
		Content   []WebSearchHit `json:"content"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*it = WebSearchResultItem{ToolUseID: w.ToolUseID, Hits: w.Content}
	return nil
}

// MarshalJSON encodes the item in the form it came in.
func (it WebSearchResultItem) MarshalJSON() ([]byte, error) {
	if it.ToolUseID == "" && it.Hits == nil {
		return json.Marshal(it.Text)
	}
	return json.Marshal(struct {
		ToolUseID string         `json:"tool_use_id"`
		Content   []WebSearchHit `json:"content"`
	}{it.ToolUseID, it.Hits})
}

// ProjectsResult is the structured result of the Projects tool. Method
// says which of the fields are set; Raw holds the whole result.
type ProjectsResult struct {
	// Method is the ProjectsInput.Method that ran.
	Method string `json:"method"`
	Notice string `json:"notice,omitempty"`
	// project_info.
	Name         string          `json:"name,omitempty"`
	Description  string          `json:"description,omitempty"`
	Instructions string          `json:"instructions,omitempty"`
	Docs         []ProjectDoc    `json:"-"`
	Knowledge    json.RawMessage `json:"knowledge,omitempty"`
	// project_info and project_memory_list.
	Files []ProjectFile `json:"files,omitempty"`
	// project_write: PresentToUser marks the deliverable the user must
	// see; LocalPath is the local file that was uploaded.
	PresentToUser bool   `json:"present_to_user,omitempty"`
	LocalPath     string `json:"local_path,omitempty"`
	// project_info: the project's sync sources, each {type, config}.
	SyncSources []json.RawMessage `json:"sync_sources,omitempty"`
	// project_read, project_write, project_delete, project_memory_read.
	Path      string `json:"path,omitempty"`
	Content   string `json:"content,omitempty"`
	FileKind  string `json:"file_kind,omitempty"`
	LocalFile string `json:"local_file,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	// project_search: Hits, and SearchDocs (document names).
	RAG        bool            `json:"rag,omitempty"`
	Hits       json.RawMessage `json:"hits,omitempty"`
	SearchDocs []string        `json:"-"`
	// project_write.
	DocUUID  string `json:"doc_uuid,omitempty"`
	Replaced bool   `json:"replaced,omitempty"`
	// project_delete.
	Deleted bool `json:"deleted,omitempty"`
	// project_memory_list and project_memory_read.
	SizeBytes int64  `json:"size_bytes,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ProjectDoc is a document of a project (project_info).
type ProjectDoc struct {
	Path      string `json:"path"`
	CreatedAt string `json:"created_at,omitempty"`
}

// ProjectFile is a project file (project_info) or memory file
// (project_memory_list).
type ProjectFile struct {
	Path      string `json:"path"`
	FileKind  string `json:"file_kind,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// UnmarshalJSON decodes the result; "docs" is documents for project_info
// and names for project_search.
func (r *ProjectsResult) UnmarshalJSON(b []byte) error {
	type plain ProjectsResult
	var p struct {
		plain
		Docs json.RawMessage `json:"docs"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ProjectsResult(p.plain)
	if len(p.Docs) > 0 && string(p.Docs) != "null" {
		var err error
		if r.Method == "project_search" {
			err = json.Unmarshal(p.Docs, &r.SearchDocs)
		} else {
			err = json.Unmarshal(p.Docs, &r.Docs)
		}
		if err != nil {
			return errors.New("claude: Projects result: docs: " + err.Error())
		}
	}
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// ArtifactResult is the structured result of the Artifact tool, whose
// shape depends on the action: a publish (URL, Path, …), a list
// (Artifacts), a read (Read), a pin (Pin); the watch and asset actions'
// members are kept raw. Raw holds the whole result.
type ArtifactResult struct {
	// publish.
	URL              string          `json:"url,omitempty"`
	Path             string          `json:"path,omitempty"`
	ArtifactID       string          `json:"artifact_id,omitempty"`
	Title            string          `json:"title,omitempty"`
	Version          string          `json:"version,omitempty"`
	Contract         string          `json:"contract,omitempty"`
	Warnings         []string        `json:"warnings,omitempty"`
	Updated          bool            `json:"updated,omitempty"`
	Owned            bool            `json:"owned,omitempty"`
	Pinned           bool            `json:"pinned,omitempty"`
	Unchanged        bool            `json:"unchanged,omitempty"`
	Icon             string          `json:"icon,omitempty"`
	Audience         string          `json:"audience,omitempty"`
	PublishesLeft    *int            `json:"publishesRemaining,omitempty"`
	PublishesResetAt int64           `json:"publishesResetAt,omitempty"`
	Stored           json.RawMessage `json:"stored,omitempty"`
	Capabilities     json.RawMessage `json:"capabilities,omitempty"`
	LiveSubscription string          `json:"liveSubscription,omitempty"`
	FolderAudience   string          `json:"folder_audience,omitempty"`
	// OutsidersInvited: the publish invited people from outside (SDK
	// 0.3.337 declares it, without saying more).
	OutsidersInvited bool `json:"outsiders_invited,omitempty"`
	Seq              int  `json:"seq,omitempty"`
	FaviconSent      bool `json:"faviconSent,omitempty"`
	IconDropped      bool `json:"iconDropped,omitempty"`

	// list.
	Artifacts     []ArtifactListing `json:"artifacts,omitempty"`
	Truncated     bool              `json:"truncated,omitempty"`
	Total         int               `json:"total,omitempty"`
	NextPageToken string            `json:"next_page_token,omitempty"`
	// TotalAtLeast: Total is a lower bound. ExternalListed: the list
	// includes artifacts shared from outside.
	TotalAtLeast   bool `json:"total_at_least,omitempty"`
	ExternalListed bool `json:"external_listed,omitempty"`
	// FilterURL is the URL a watch was filtered to.
	FilterURL   string `json:"filter_url,omitempty"`
	PinsEnabled bool   `json:"pins_enabled,omitempty"`
	Scope       string `json:"scope,omitempty"`

	// read.
	Read         *ArtifactRead    `json:"read,omitempty"`
	ArtifactRead *ArtifactReadRef `json:"artifactRead,omitempty"`

	// pin and unpin.
	Pin *ArtifactPin `json:"pin,omitempty"`

	// watch, unwatch, status, and the asset actions, as sent.
	Watch        json.RawMessage `json:"watch,omitempty"`
	Unwatch      json.RawMessage `json:"unwatch,omitempty"`
	Watches      json.RawMessage `json:"watches,omitempty"`
	Arms         json.RawMessage `json:"arms,omitempty"`
	Written      json.RawMessage `json:"written,omitempty"`
	AssetUpload  json.RawMessage `json:"asset_upload,omitempty"`
	AssetUploads json.RawMessage `json:"asset_uploads,omitempty"`
	AssetList    json.RawMessage `json:"asset_list,omitempty"`
	AssetRead    json.RawMessage `json:"asset_read,omitempty"`
	AssetDelete  json.RawMessage `json:"asset_delete,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ArtifactListing is one artifact of a list.
type ArtifactListing struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Favicon   string `json:"favicon,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	// Rel is "mine" or "shared"; Role the user's role on a shared one.
	Rel      string `json:"rel,omitempty"`
	Role     string `json:"role,omitempty"`
	External bool   `json:"external,omitempty"`
	Pinned   bool   `json:"pinned,omitempty"`
}

// ArtifactRead is an artifact as read.
type ArtifactRead struct {
	URL        string  `json:"url"`
	Bytes      int     `json:"bytes"`
	Code       int     `json:"code"`
	CodeText   string  `json:"codeText"`
	Result     string  `json:"result"`
	DurationMS float64 `json:"durationMs"`
	Title      string  `json:"title,omitempty"`
}

// ArtifactPin is the outcome of a pin or unpin.
type ArtifactPin struct {
	Action string `json:"action"` // "pin" or "unpin"
	URL    string `json:"url"`
	Pinned bool   `json:"pinned"`
	Title  string `json:"title,omitempty"`
}

// UnmarshalJSON decodes the result, keeping it whole in Raw.
func (r *ArtifactResult) UnmarshalJSON(b []byte) error {
	type plain ArtifactResult
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ArtifactResult(p)
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}
