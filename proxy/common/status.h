#pragma once
// Errors as values for proxy/ and filters/ (no exceptions there). A Status is ok or carries a
// code and a message; StatusOr<T> is a value or the Status saying why there is none.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ferry {

enum class StatusCode { Ok, InvalidArgument, NotFound, Unavailable, Internal, ProtocolError };

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool isOk() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return {StatusCode::InvalidArgument, std::move(m)}; }
inline Status protocolError(std::string m) { return {StatusCode::ProtocolError, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::Unavailable, std::move(m)}; }
inline Status internalError(std::string m) { return {StatusCode::Internal, std::move(m)}; }
inline Status notFound(std::string m) { return {StatusCode::NotFound, std::move(m)}; }

template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool isOk() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace ferry
