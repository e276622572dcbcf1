package allfives.client

import allfives.v1.Allfives.ErrorReason
import com.google.protobuf.Any
import com.google.protobuf.ByteString
import com.google.rpc.BadRequest
import com.google.rpc.ErrorInfo
import io.grpc.Metadata
import io.grpc.Status
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * AllFivesException.from reads the details from the trailer's bytes, on the full and on
 * the lite runtime alike (CI runs this on both), and bad bytes never
 * make it throw: what does not parse is left out.
 */
class ErrorDetailsTest {
    private val key = Metadata.Key.of("grpc-status-details-bin", Metadata.BINARY_BYTE_MARSHALLER)

    private fun refusal(code: Status.Code, details: ByteArray?): Throwable {
        val trailers = Metadata()
        if (details != null) trailers.put(key, details)
        return Status.fromCode(code).withDescription("scripted").asException(trailers)
    }

    private fun any(name: String, value: ByteString): Any =
        Any.newBuilder().setTypeUrl("type.googleapis.com/$name").setValue(value).build()

    private val info = ErrorInfo.newBuilder().setDomain(AllFivesException.DOMAIN).setReason("TOKEN_INVALID")
        .putMetadata("latest_state_id", "ab").build()
    private val badRequest = BadRequest.newBuilder().addFieldViolations(
        BadRequest.FieldViolation.newBuilder().setField("state").setDescription("altered"),
    ).build()

    @Test
    fun `ErrorInfo and BadRequest are read by type URL`() {
        val status = com.google.rpc.Status.newBuilder().setCode(3).setMessage("scripted")
            .addDetails(any("google.rpc.ErrorInfo", info.toByteString()))
            .addDetails(any("google.rpc.BadRequest", badRequest.toByteString()))
            .addDetails(any("google.rpc.Help", ByteString.copyFromUtf8("not read"))) // unknown: skipped
            .build()
        val e = AllFivesException.from(refusal(Status.Code.INVALID_ARGUMENT, status.toByteArray()))
        assertEquals(Status.Code.INVALID_ARGUMENT, e.code)
        assertEquals(ErrorReason.TOKEN_INVALID, e.reason)
        assertEquals(mapOf("latest_state_id" to "ab"), e.metadata)
        assertEquals(mapOf("state" to "altered"), e.fields)
    }

    @Test
    fun `a reason newer than this code is UNRECOGNIZED, another domain's is none`() {
        val newer = info.toBuilder().setReason("A_REASON_FROM_THE_FUTURE").build()
        val other = info.toBuilder().setDomain("elsewhere").build()
        val read = { i: ErrorInfo ->
            AllFivesException.from(
                refusal(
                    Status.Code.FAILED_PRECONDITION,
                    com.google.rpc.Status.newBuilder().addDetails(any("google.rpc.ErrorInfo", i.toByteString())).build().toByteArray(),
                ),
            )
        }
        assertEquals(ErrorReason.UNRECOGNIZED, read(newer).reason)
        assertNull(read(other).reason)
    }

    @Test
    fun `bad bytes leave the code alone, and a damaged detail leaves the others`() {
        val garbage = byteArrayOf(0x0a, 0x7f, 0x01) // a length past the end
        val none = AllFivesException.from(refusal(Status.Code.UNAVAILABLE, garbage))
        assertEquals(Status.Code.UNAVAILABLE, none.code)
        assertNull(none.reason)
        assertTrue(none.retryable)
        val mixed = com.google.rpc.Status.newBuilder()
            .addDetails(any("google.rpc.ErrorInfo", ByteString.copyFrom(garbage)))
            .addDetails(any("google.rpc.BadRequest", badRequest.toByteString()))
            .build()
        val e = AllFivesException.from(refusal(Status.Code.INVALID_ARGUMENT, mixed.toByteArray()))
        assertNull(e.reason)
        assertEquals(mapOf("state" to "altered"), e.fields)
        // No trailers at all: a transport failure.
        assertNull(AllFivesException.from(RuntimeException("no status")).reason)
    }
}
