package sparkbloom

import org.apache.spark.sql.SparkSessionExtensions

import sparkbloom.formats.TableFormats
import sparkbloom.functions.BloomFunctions
import sparkbloom.index.TableFormat
import sparkbloom.optimizer.{BloomScanRule, BloomSkippingRule, KeySetPruningRule}
import sparkbloom.sql.BloomSqlParser
import sparkbloom.write.{BackgroundMaintenance, MaintainOnWrite}

/**
 * The class users name in `spark.sql.extensions`:
 * {{{
 *   spark-shell --jars sparkbloom.jar --conf spark.sql.extensions=sparkbloom.SparkBloomExtensions
 *   SELECT * FROM events WHERE user_id = 42   -- skips files and row groups that cannot hold 42
 * }}}
 */
class SparkBloomExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    // a jar of another Spark line is refused here, with the reason, rather than failing later
    BuildInfo.checkRuntime()

    // parser: CREATE / DROP / REFRESH / SHOW / DESCRIBE BLOOM INDEX (+ Databricks' BLOOMFILTER INDEX)
    ext.injectParser((_, delegate) => new BloomSqlParser(delegate))

    // optimizer: push =, <=>, IN, IS NULL down to bloom indexes, through the table formats (TableFormats)
    // (and, before the first lookup is planned, the background maintenance that catches an index up with files a
    // lookup found it does not cover, and with streaming sinks' batches)
    ext.injectOptimizerRule { session =>
      BackgroundMaintenance.register(session)
      new BloomSkippingRule(session, TableFormats.all, TableFormat.Optimizer)
    }

    // after Delta's own data skipping (list sparkbloom after Delta's extension): Delta scans
    ext.injectPreCBORule(session => new BloomSkippingRule(session, TableFormats.all, TableFormat.PreCbo))

    // run-time keys (joins, IN (subquery), EXISTS, MERGE): Spark's run-time filter on indexed columns, whose
    // keys choose the scan's files when it runs
    ext.injectPreCBORule(session => new KeySetPruningRule(session, TableFormats.all))

    // physical plan: V2 scans pruned once filters are pushed into them; SQL metrics (files / row groups
    // skipped, index bytes read, probe time) over pruned scans
    ext.injectColumnar(session => new BloomScanRule(session, TableFormats.all))

    // maintenance on write: Spark's Parquet writes into an indexed table bring its indexes up to date
    ext.injectColumnar(session => new MaintainOnWrite.WrapRule(session))

    // functions: sbbf_hash, sbbf_num_bytes, sbbf_agg, sbbf_might_contain
    BloomFunctions.all.foreach(ext.injectFunction)
  }
}
