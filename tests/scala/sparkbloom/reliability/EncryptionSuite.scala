package sparkbloom.reliability

import java.io.File
import java.nio.file.Files

import sparkbloom.index.{BloomIndexException, IndexStore}
import sparkbloom.testing.SparkSessionSuite

/** Encrypted Parquet: no index is built from it, with a clear error, and nothing is committed (docs/encryption.md). */
class EncryptionSuite extends SparkSessionSuite {

  private def encryptedTable(): String = {
    val shared = sys.props.getOrElse("sparkbloom.shared", "../shared")
    val src = new File(shared, "fixtures/parquet-testing/encrypt_columns_and_footer_bloom_filter.parquet.encrypted")
    assume(src.exists(), s"fixture $src is missing")
    val dir = tempDir("enc") + "/t"
    new File(dir).mkdirs()
    Files.copy(src.toPath, new File(dir, "part-00000-encrypted.parquet").toPath)
    dir
  }

  test("CREATE BLOOM INDEX on a file with an encrypted footer fails with a clear error and commits nothing") {
    val dir = encryptedTable()
    val e = intercept[BloomIndexException] {
      spark.sql(s"CREATE BLOOM INDEX enc ON parquet.`$dir` (double_field)")
    }
    assert(e.getMessage.toLowerCase.contains("encrypt"), e.getMessage)
    val ix = new File(dir, s"${IndexStore.DirName}/enc")
    val commits = Option(new File(ix, "_commits").listFiles()).toSeq.flatten.filter(_.getName.endsWith(".json"))
    assert(commits.isEmpty, commits)
    val dataDirs = Option(ix.listFiles()).toSeq.flatten.filter(f => f.isDirectory && f.getName.startsWith("v"))
    assert(dataDirs.isEmpty, dataDirs)
  }
}
