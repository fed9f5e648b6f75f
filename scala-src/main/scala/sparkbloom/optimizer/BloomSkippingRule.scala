package sparkbloom.optimizer

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat

import sparkbloom.BloomConf
import sparkbloom.index.{IndexStore, IndexVersion}
import sparkbloom.index.sliced.IndexCache
import sparkbloom.scan.{BloomParquetFileFormat, BloomSkippingFileIndex, RowGroupSelection}

/**
 * For a Filter over a Parquet file relation whose table has bloom indexes on referenced columns, swaps
 * the relation's file index for a [[BloomSkippingFileIndex]] (drops files that cannot match) and its
 * format for a [[BloomParquetFileFormat]] (reads only row groups that may match, with Spark's own reader).
 *
 * Conservative by construction: any exception, an unreadable index or a predicate it does not understand
 * leaves the plan as it was.
 */
class BloomSkippingRule(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!BloomConf.enabled(session)) return plan
    IndexCache.setMaxBytes(BloomConf.cacheMaxBytes(session))
    try plan.transformDown {
      case f @ Filter(cond, l @ LogicalRelation(rel: HadoopFsRelation, output, table, false, _))
          if rel.fileFormat.getClass == classOf[ParquetFileFormat] && !rel.location.isInstanceOf[BloomSkippingFileIndex] =>
        rewrite(f, cond, l, rel, output.map(a => a.exprId -> a.name).toMap, table.map(_.location)).getOrElse(f)
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: skipping disabled for this query after an error: $e")
        plan
    }
  }

  private def rewrite(f: Filter, cond: org.apache.spark.sql.catalyst.expressions.Expression, l: LogicalRelation,
                      rel: HadoopFsRelation, names: Map[org.apache.spark.sql.catalyst.expressions.ExprId, String],
                      catalogLocation: Option[java.net.URI]): Option[LogicalPlan] = {
    val root = catalogLocation.map(new Path(_)).orElse(rel.location.rootPaths match {
      case Seq(single) => Some(single)
      case _ => None
    })
    root.flatMap { r =>
      val conf = session.sessionState.newHadoopConf()
      val fs = r.getFileSystem(conf)
      val base = IndexStore.indexesDir(fs.makeQualified(r), BloomConf.indexRoot(session))
      if (!fs.exists(base)) None
      else {
        val used: Seq[(IndexVersion, BloomPredicate)] = fs.listStatus(base).toSeq.filter(_.isDirectory).flatMap { st =>
          try {
            IndexStore.latestMeta(fs, st.getPath)._1.flatMap { meta =>
              val indexed = meta.columns.map(_.name)
              val lookup = (id: org.apache.spark.sql.catalyst.expressions.ExprId) =>
                names.get(id).flatMap(n => indexed.find(_ == n).orElse(indexed.find(_.equalsIgnoreCase(n))))
              val pred = BloomPredicate.translate(cond, lookup)
              if (pred == BloomPredicate.Unknown) None
              else Some(IndexStore.load(fs, conf, st.getPath, meta) -> pred)
            }
          } catch { case NonFatal(e) => logWarning(s"sparkbloom: ignoring index ${st.getPath}: $e"); None }
        }
        if (used.isEmpty) None
        else {
          val selection = new RowGroupSelection(BloomConf.rowGroupPruning(session))
          val index = new BloomSkippingFileIndex(session, rel.location, used, selection, l.catalogTable.map(_.identifier.unquotedString)
            .getOrElse(r.toString),
            int96Probes = !session.conf.get("spark.sql.parquet.int96TimestampConversion", "false").toBoolean)
          val format = new BloomParquetFileFormat(selection)
          val newRel = rel.copy(location = index, fileFormat = format)(rel.sparkSession)
          Some(f.copy(child = l.copy(relation = newRel)))
        }
      }
    }
  }
}
