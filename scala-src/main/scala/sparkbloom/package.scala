/** sparkbloom: Parquet Split Block Bloom Filter skipping for Apache Spark. */
package object sparkbloom
