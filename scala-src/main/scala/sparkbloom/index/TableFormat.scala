package sparkbloom.index

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.connector.write.WriterCommitMessage
import org.apache.spark.sql.execution.SparkPlan

/**
 * A table format sparkbloom indexes and prunes: Spark's V1 and V2 Parquet sources, Delta Lake, Iceberg. The
 * core (index, scan, optimizer) knows formats only through this trait; the formats themselves are plug-ins
 * (`sparkbloom.formats`), listed in one place (`sparkbloom.formats.TableFormats`) and handed to the rules and
 * the index facade. Every method answers None for a table that is not this format's, so the next format is
 * asked. A format whose library is not on the classpath is not in the list at all.
 */
trait TableFormat {

  /** A short name, for logs. */
  def name: String

  /**
   * `ref` as a table of this format, listed at its newest snapshot: its files and their identity, and where each
   * column is in those files (the reference the index is keyed by). `analyzed`: the analysed plan of
   * `spark.table(name)` for a catalog name, computed once for all formats (None: no such table). `refresh`: the
   * caller is about to build from the listing, so cached listings are refreshed first.
   */
  def resolve(spark: SparkSession, ref: TableRef, analyzed: () => Option[LogicalPlan], refresh: Boolean)
      : Option[ResolvedTable]

  /**
   * The table a DataFrame reads, from the leaf of its plan (a relation); None when the leaf is not this format's.
   * Throws a [[BloomIndexException]] naming the reason when it is, but cannot be indexed.
   */
  def tableOf(leaf: LogicalPlan): Option[TableRef]

  /**
   * `filter`, whose scan is rewritten to skip what the bloom indexes rule out, in the logical `phase` given;
   * None when the scan is not this format's or nothing applies. `plan`: the whole plan (a format may refuse
   * plans that rewrite rows).
   */
  def rewrite(session: SparkSession, phase: TableFormat.Phase, filter: Filter, plan: LogicalPlan): Option[LogicalPlan]

  /**
   * Key-set pruning: `leaf`, a scan of this format, with its file listing replaced by one that keeps, at
   * execution, only the files whose row groups may hold one of the keys a run-time filter on `attr` will give
   * (a [[RuntimeKeyed]] file index, bound to those keys by the physical plan). `nullFor`: see [[KeySetPruner]].
   * None when the scan is not this format's, cannot be pruned so, or no index covers the column.
   */
  def keySetScan(session: SparkSession, leaf: LogicalPlan, attr: Attribute, nullFor: Option[Any],
                 label: String): Option[LogicalPlan] = None

  /**
   * Key-set pruning of a scan this format prunes only once it is physical (Spark's V2 Parquet scan): `scan` reading,
   * when it runs, only the files whose row groups may hold one of the keys `keys` gives for `attr`. None when the
   * scan is not this format's or no index covers the column.
   */
  def keySetPhysical(session: SparkSession, scan: SparkPlan, attr: Attribute, nullFor: Option[Any],
                     keys: KeySource): Option[SparkPlan] = None

  /** A physical scan replaced by one that prunes at execution (Spark's V2 scans); None leaves it as it is. */
  def rewritePhysical(session: SparkSession, scan: SparkPlan): Option[SparkPlan] = None

  /**
   * Maintenance on write: the tables of this format that `write` commits to, where `write` is the logical node a
   * write was planned from (a command the format runs, such as Delta's MERGE, or a V2 write such as `AppendData` or
   * `ReplaceData`). Empty when it is not a write into a table of this format. Only what the node holds is looked
   * at: no table is listed or loaded.
   */
  def writtenBy(session: SparkSession, write: LogicalPlan): Seq[TableFormat.Written] = Nil

  /**
   * Maintenance on write: the table a Structured Streaming sink of this format writes, from the sink's description
   * in the query's progress (the file sink's `FileSink[path]`, Delta's `DeltaSink[path]`); None when it is not this
   * format's sink.
   */
  def writtenBySink(session: SparkSession, description: String): Option[TableFormat.Written] = None

  /**
   * Maintenance on write: this format tells `onCommit`, on the committing thread as each commit finishes, of the
   * commits no plan marks as a write (a procedure's, a streaming sink's), where it has a way to hear of them. Called
   * once per JVM; the default hears of nothing.
   */
  def watchCommits(onCommit: TableFormat.Commit => Unit): Unit = ()

  /**
   * Maintenance on write, inside the write's tasks: the data files one write task of this format wrote, from the
   * commit message its data writer returned (a V2 append's), as (path as this format lists it, rows), in the order
   * written; None when the message is not this format's or cannot be read. Runs in the write tasks and on the
   * driver. A format that answers here is asked to index its V2 appends in their tasks ([[appendsIndexedInTask]]).
   */
  def filesWritten(message: WriterCommitMessage, conf: Configuration): Option[Seq[(String, Long)]] = None

  /** Whether V2 appends (`AppendData`) into this format's tables are indexed in their tasks ([[filesWritten]]). */
  def appendsIndexedInTask: Boolean = false
}

object TableFormat {
  /**
   * When a logical rewrite runs: in the optimizer, or after it among the pre-CBO rules (after Delta's own skipping).
   */
  sealed trait Phase
  case object Optimizer extends Phase
  case object PreCbo extends Phase

  /** A table a write commits to: its root (where its indexes are stored) and the name it is resolved by. */
  final case class Written(root: Path, table: TableRef)

  /** A commit into `table` that no plan marked ([[TableFormat.watchCommits]]); `streaming`: a sink's micro-batch. */
  final case class Commit(table: TableRef, what: String, streaming: Boolean)

  /** `description` is `<sink>[<path>]`: the path, qualified. */
  def sinkPath(session: SparkSession, sink: String, description: String): Option[Path] =
    if (!description.startsWith(sink + "[") || !description.endsWith("]")) None
    else {
      val p = new Path(description.substring(sink.length + 1, description.length - 1))
      Some(p.getFileSystem(session.sessionState.newHadoopConf()).makeQualified(p))
    }

  /** The first answer of `formats`, in their order. */
  def first[T](formats: Seq[TableFormat])(f: TableFormat => Option[T]): Option[T] = {
    val it = formats.iterator
    while (it.hasNext) { val r = f(it.next()); if (r.isDefined) return r }
    None
  }
}
