package sparkbloom.index

import sparkbloom.index.sliced.{EntryMeta, Segment, SummaryLink}

/** What one build wrote: counts for DESCRIBE, the files it could not index, and the entries and segments to commit. */
final case class BuildStats(files: Long, rowGroups: Long, entries: Long, harvested: Long, scanned: Long,
                            sizeInBytes: Long, skipped: Seq[String], entryMetas: Seq[EntryMeta], segments: Seq[Segment],
                            summaries: Seq[SummaryLink] = Nil)
