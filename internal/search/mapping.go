package search

import (
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/restarea/restarea"
)

// Field names in the index. Title and body are each one field analysed by
// textAnalyzer.
const (
	fTitle   = "title"
	fBody    = "body"
	fType    = "type"
	fActor   = "actor"
	fCreated = "created_at"
)

// textAnalyzer is the one analyzer of title and body, for documents and
// queries alike: English stemming ("posting" finds "posted") and CJK
// bigrams (a Japanese word is found inside a sentence that has no spaces)
// in one pass. Mapping version 2 indexed each text twice, once with
// bleve's "en" analyzer and once with its "cjk" one: tokenizing,
// inverting and merging every text twice was the larger part of the
// index's CPU, itself the larger part of a node's CPU per post. The
// filters are those two analyzers' filters in one chain: the bigram
// filter only joins CJK tokens and the English filters only change Latin
// ones (the stemmer leaves words of two letters or fewer, and every
// bigram, alone), so each token comes out as one of the two analyzers
// made it — a Latin token as "en" did, plus full-width letters made
// narrow; a CJK token as "cjk" did. TestAnalyzerMatchesEnAndCJK holds
// that.
const textAnalyzer = "restarea_text"

// textAnalyzerConfig defines textAnalyzer (bleve stores it in the index's
// mapping, so a reopened index analyses queries the same way).
func textAnalyzerConfig() map[string]interface{} {
	return map[string]interface{}{
		"type":      custom.Name,
		"tokenizer": unicode.Name,
		"token_filters": []interface{}{
			cjk.WidthName, en.PossessiveName, lowercase.Name, cjk.BigramName, en.StopName, porter.Name,
		},
	}
}

// mappingVersion changes whenever the mapping does; an index built with
// another version is rebuilt.
const mappingVersion = "3" // 2: zap v16 segments (segmentConfig); 3: one text field each for title and body (textAnalyzer), no _all field

// segmentConfig makes scorch write zap version 16 segments, not bleve
// v2.6's default 17. Zap 17 clears an in-memory segment's term-dictionary
// cache when scorch closes the segment after persisting it, while a batch
// or a query still reads it from an older snapshot: under steady writes
// the indexer then panicked with "assignment to entry in nil map" in
// zapx/v17 invertedIndexCache.insertLOCKED, taking the node down (seen
// about once in seven three-node runs of node.TestDiskFullLeader). Zap 16
// has no such cache and reads the same mapping. The config is stored in
// the index's meta, so it also applies when the index is reopened; the
// mapping version moved to rebuild indexes made with zap 17.
// A new map each time: bleve adds its own keys to the one it is given.
func segmentConfig() map[string]interface{} {
	return map[string]interface{}{"forceSegmentType": "zap", "forceSegmentVersion": 16}
}

func newMapping() mapping.IndexMapping {
	text := func(name, analyzer string) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Name = name
		f.Analyzer = analyzer
		f.Store = false // results are read from the state, never from the index
		f.IncludeTermVectors = true
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	kw := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Analyzer = keyword.Name
		f.Store = false
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	dt := bleve.NewDateTimeFieldMapping()
	dt.Store = false
	dt.IncludeInAll = false
	dt.DocValues = false

	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("title", text(fTitle, textAnalyzer))
	dm.AddFieldMappingsAt("body", text(fBody, textAnalyzer))
	dm.AddFieldMappingsAt(fType, kw())
	dm.AddFieldMappingsAt(fActor, kw())
	dm.AddFieldMappingsAt(fCreated, dt)
	// No "_all" field: every query names its fields, and bleve would
	// otherwise give each document a composite field that every analysed
	// field is offered to and that every segment carries.
	dm.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())

	im := bleve.NewIndexMapping()
	if err := im.AddCustomAnalyzer(textAnalyzer, textAnalyzerConfig()); err != nil {
		panic(err) // a fixed definition: fails every test if it is wrong
	}
	im.DefaultMapping = dm
	im.DefaultAnalyzer = standard.Name
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im
}

// document is what the index holds of an entry: its text and the fields
// that filters use. Entries are immutable once stored (hiding changes
// only visibility, which is checked against the state at query time), so
// a document never needs updating, only deleting.
func document(e restarea.Entry) map[string]any {
	return map[string]any{
		"title":  e.Title,
		"body":   e.Body,
		fType:    e.Type,
		fActor:   e.Actor.Name,
		fCreated: e.CreatedAt.UTC(),
	}
}
