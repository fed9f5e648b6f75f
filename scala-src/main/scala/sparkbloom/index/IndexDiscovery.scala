package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId, Expression, IsNull}
import org.slf4j.LoggerFactory

import sparkbloom.BloomConf
import sparkbloom.predicate.BloomPredicate

/** Finds the bloom indexes stored for a table that can answer part of a filter condition. */
object IndexDiscovery {
  private val log = LoggerFactory.getLogger(getClass)

  /** The indexes stored for the table at `root` that answer part of `cond` (`names`: attribute -> column). */
  def indexesAt(session: SparkSession, root: Path, cond: Expression,
                names: Map[ExprId, String]): Option[(Path, Seq[(IndexVersion, BloomPredicate)])] =
    indexesAt(session, root, cond, byName(names))

  /**
   * The indexes stored for the table at `root` that cover `attr`'s column, each with the column's name in it
   * (`column`: as below).
   */
  def indexesOf(session: SparkSession, root: Path, attr: Attribute,
                column: (ExprId, Seq[IndexedColumn]) => Option[String]): Seq[(IndexVersion, String)] =
    indexesAt(session, root, IsNull(attr), column).toSeq.flatMap(_._2).collect {
      case (v, BloomPredicate.IsNull(c)) => v -> c
    }

  /** The same, with `names` mapping attributes to column names (Parquet tables). */
  def indexesOf(session: SparkSession, root: Path, attr: Attribute,
                names: Map[ExprId, String]): Seq[(IndexVersion, String)] =
    indexesOf(session, root, attr, byName(names))

  private def byName(names: Map[ExprId, String]): (ExprId, Seq[IndexedColumn]) => Option[String] =
    (id: ExprId, indexed: Seq[IndexedColumn]) =>
      names.get(id).flatMap(n => indexed.find(_.name == n).orElse(indexed.find(_.name.equalsIgnoreCase(n))).map(_.name))

  /**
   * The same, with `column` saying which indexed column (if any) an attribute is: Delta and Iceberg tables
   * find them by the files' identity (physical name, field id) rather than by the name in the query.
   */
  def indexesAt(session: SparkSession, root: Path, cond: Expression,
                column: (ExprId, Seq[IndexedColumn]) => Option[String])
      : Option[(Path, Seq[(IndexVersion, BloomPredicate)])] = {
    val conf = session.sessionState.newHadoopConf()
    val base = IndexStore.indexesDir(root.getFileSystem(conf).makeQualified(root), BloomConf.indexRoot(session))
    // the index's own file system: `spark.sparkbloom.index.root` may be on another bucket or store than the table
    val fs = base.getFileSystem(conf)
    val ttl = BloomConf.lookupListingTtlMs(session, fs)
    val used: Seq[(IndexVersion, BloomPredicate)] = IndexStore.indexDirs(fs, base, ttl).flatMap { dir =>
      try {
        IndexStore.newestForLookup(fs, dir, ttl)._1.flatMap { meta =>
          val lookup = (id: ExprId) => column(id, meta.columns)
          val pred = BloomPredicate.translate(cond, lookup)
          if (pred == BloomPredicate.Unknown) None
          else {
            val v = IndexStore.load(fs, conf, dir, meta)
            // a remembered version found damaged (vacuumed by another writer, say): listed again next time
            if (v.problems.nonEmpty || v.damaged.nonEmpty) IndexStore.forget(dir)
            Some(v -> pred)
          }
        }
      } catch { case NonFatal(e) => IndexStore.forget(dir); log.warn(s"sparkbloom: ignoring index $dir: $e"); None }
    }
    if (used.isEmpty) None else Some(root -> used)
  }
}
