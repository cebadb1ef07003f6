! pjrt.f90: the C API of pjrt-client (pjrt.h, libpjrt.so.1) for Fortran 2018, over iso_c_binding.
! Run jax.export models, StableHLO programs and AOT artifacts on any PJRT plugin from Fortran.
! Installed as source by `pjrt capi install PREFIX` (PREFIX/share/pjrt/fortran/pjrt.f90): compile
! it with your own compiler (a .mod file belongs to one compiler) and link with -lpjrt.
! docs/c-api.md of pjrt-client has the whole story; this is what a Fortran caller needs.
!
! Arrays and dimensions
!   PJRT tensors are row-major (C order). A Fortran array is column-major, so the same memory read
!   in C order has its dimensions reversed: positions(3, n) in Fortran is the C array f64[n, 3],
!   with the same bytes, atom after atom. pjrt_tensor_of(a) therefore describes `a` with its shape
!   reversed and never copies: a model exported with positions of shape (n, 3) takes a Fortran
!   positions(3, n) as it is, and its (n, 3) output lands in a Fortran grad(3, n). Where a model
!   wants the same dimension order as your array (a matrix W(m, k) that the model reads as
!   (m, k)), ask for the transpose: pjrt_transposed(w) is a copy with the dimensions reversed.
!   pjrt_fortran_shape(tensor) gives a tensor's dimensions in Fortran order.
!
! Lifetimes
!   pjrt_tensor_of(a) points to `a`: give `a` the TARGET attribute, keep it alive and unmoved
!   until pjrt_run returns, and pass only contiguous arrays (a non-contiguous one gives a tensor
!   with no data, which pjrt_run refuses with a status). Inputs are only read during the call;
!   outputs are written into your arrays (pjrt_tensor_of on the output array), or allocated by
!   the library when an output tensor's data is c_null_ptr (then free it with pjrt_tensor_free).
!   Handles (runtime, model, status) are type(c_ptr) values: free each once.
!
! Errors
!   Every call that can fail returns a status, type(c_ptr): c_null_ptr on success. pjrt_ok(status,
!   message) says whether it succeeded and, when not, gives its message and frees it;
!   pjrt_check(status, what) stops the program with the message (error stop) when it failed.
!
! Threads
!   Every function is thread-safe (OpenMP threads may share a model); each call's tensors are its own.
module pjrt
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_char, c_null_char, c_size_t, c_int32_t, &
    c_int64_t, c_float, c_double, c_loc, c_f_pointer, c_associated, c_sizeof
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  private

  ! The ABI this module was written for (pjrt.h's PJRT_ABI_VERSION_MAJOR, PJRT_MAX_NDIM).
  integer, parameter, public :: PJRT_ABI_VERSION_MAJOR = 1
  integer, parameter, public :: PJRT_MAX_NDIM = 8

  ! Element types (pjrt.h's PJRT_DTYPE_*).
  integer(c_int32_t), parameter, public :: PJRT_DTYPE_BOOL = 1, PJRT_DTYPE_S8 = 2, PJRT_DTYPE_S16 = 3, &
    PJRT_DTYPE_S32 = 4, PJRT_DTYPE_S64 = 5, PJRT_DTYPE_U8 = 6, PJRT_DTYPE_U16 = 7, PJRT_DTYPE_U32 = 8, &
    PJRT_DTYPE_U64 = 9, PJRT_DTYPE_F16 = 10, PJRT_DTYPE_F32 = 11, PJRT_DTYPE_F64 = 12, PJRT_DTYPE_BF16 = 13, &
    PJRT_DTYPE_C64 = 14, PJRT_DTYPE_C128 = 15

  ! Status codes (pjrt.h's PJRT_CODE_*, absl's numbers).
  integer(c_int32_t), parameter, public :: PJRT_CODE_OK = 0, PJRT_CODE_CANCELLED = 1, PJRT_CODE_UNKNOWN = 2, &
    PJRT_CODE_INVALID_ARGUMENT = 3, PJRT_CODE_DEADLINE_EXCEEDED = 4, PJRT_CODE_NOT_FOUND = 5, &
    PJRT_CODE_ALREADY_EXISTS = 6, PJRT_CODE_PERMISSION_DENIED = 7, PJRT_CODE_RESOURCE_EXHAUSTED = 8, &
    PJRT_CODE_FAILED_PRECONDITION = 9, PJRT_CODE_ABORTED = 10, PJRT_CODE_OUT_OF_RANGE = 11, &
    PJRT_CODE_UNIMPLEMENTED = 12, PJRT_CODE_INTERNAL = 13, PJRT_CODE_UNAVAILABLE = 14, &
    PJRT_CODE_DATA_LOSS = 15, PJRT_CODE_UNAUTHENTICATED = 16

  ! pjrt_tensor: a tensor in host memory, row-major. dims(1:ndim) are C's dims[0..ndim-1].
  type, bind(c), public :: pjrt_tensor
    type(c_ptr) :: data = c_null_ptr
    integer(c_size_t) :: nbytes = 0
    integer(c_int32_t) :: dtype = 0
    integer(c_int32_t) :: ndim = 0
    integer(c_int64_t) :: dims(PJRT_MAX_NDIM) = 0
  end type pjrt_tensor

  ! pjrt_options: how pjrt_runtime_new makes a runtime (pjrt_open_runtime fills it for you).
  type, bind(c), public :: pjrt_options
    integer(c_size_t) :: struct_size = 0
    type(c_ptr) :: plugin = c_null_ptr
    type(c_ptr) :: compile_cache = c_null_ptr
    integer(c_int32_t) :: cpu_devices = 0
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: install_plugin = 0
    type(c_ptr) :: client_options = c_null_ptr
  end type pjrt_options

  ! pjrt_signature: what a model takes and gives; inputs and outputs point to arrays of
  ! pjrt_tensor owned by the model (pjrt_inputs_of / pjrt_outputs_of give Fortran pointers).
  type, bind(c), public :: pjrt_signature
    integer(c_size_t) :: n_inputs = 0
    type(c_ptr) :: inputs = c_null_ptr
    integer(c_size_t) :: n_outputs = 0
    type(c_ptr) :: outputs = c_null_ptr
  end type pjrt_signature

  ! The C functions, one for one (pjrt.h says what each does).
  public :: pjrt_abi_version, pjrt_status_code, pjrt_status_message, pjrt_status_free, pjrt_tensor_free, &
    pjrt_runtime_new, pjrt_runtime_free, pjrt_model_load, pjrt_model_signature, pjrt_model_run, pjrt_model_free
  interface
    ! (major << 16) | minor of the library, as an unsigned 32-bit value in a signed integer.
    function pjrt_abi_version() bind(c, name='pjrt_abi_version') result(version)
      import :: c_int32_t
      integer(c_int32_t) :: version
    end function pjrt_abi_version

    function pjrt_status_code(status) bind(c, name='pjrt_status_code') result(code)
      import :: c_ptr, c_int32_t
      type(c_ptr), value :: status
      integer(c_int32_t) :: code
    end function pjrt_status_code

    function pjrt_status_message(status) bind(c, name='pjrt_status_message') result(message)
      import :: c_ptr
      type(c_ptr), value :: status
      type(c_ptr) :: message
    end function pjrt_status_message

    subroutine pjrt_status_free(status) bind(c, name='pjrt_status_free')
      import :: c_ptr
      type(c_ptr), value :: status
    end subroutine pjrt_status_free

    function pjrt_tensor_free(tensor) bind(c, name='pjrt_tensor_free') result(status)
      import :: c_ptr, pjrt_tensor
      type(pjrt_tensor), intent(inout) :: tensor
      type(c_ptr) :: status
    end function pjrt_tensor_free

    function pjrt_runtime_new(options, runtime) bind(c, name='pjrt_runtime_new') result(status)
      import :: c_ptr, pjrt_options
      type(pjrt_options), intent(in) :: options
      type(c_ptr), intent(out) :: runtime
      type(c_ptr) :: status
    end function pjrt_runtime_new

    function pjrt_runtime_free(runtime) bind(c, name='pjrt_runtime_free') result(status)
      import :: c_ptr
      type(c_ptr), value :: runtime
      type(c_ptr) :: status
    end function pjrt_runtime_free

    ! path and weights_path: NUL-terminated (c_loc of a character(kind=c_char) target), or
    ! c_null_ptr for no weights.
    function pjrt_model_load(runtime, path, weights_path, model) bind(c, name='pjrt_model_load') result(status)
      import :: c_ptr
      type(c_ptr), value :: runtime, path, weights_path
      type(c_ptr), intent(out) :: model
      type(c_ptr) :: status
    end function pjrt_model_load

    function pjrt_model_signature(model, signature) bind(c, name='pjrt_model_signature') result(status)
      import :: c_ptr, pjrt_signature
      type(c_ptr), value :: model
      type(pjrt_signature), intent(out) :: signature
      type(c_ptr) :: status
    end function pjrt_model_signature

    function pjrt_model_run(model, inputs, n_inputs, outputs, n_outputs) bind(c, name='pjrt_model_run') &
      result(status)
      import :: c_ptr, c_size_t, pjrt_tensor
      type(c_ptr), value :: model
      type(pjrt_tensor), intent(in) :: inputs(*)
      integer(c_size_t), value :: n_inputs
      type(pjrt_tensor), intent(inout) :: outputs(*)
      integer(c_size_t), value :: n_outputs
      type(c_ptr) :: status
    end function pjrt_model_run

    function pjrt_model_free(model) bind(c, name='pjrt_model_free') result(status)
      import :: c_ptr
      type(c_ptr), value :: model
      type(c_ptr) :: status
    end function pjrt_model_free
  end interface

  ! The Fortran side: arrays in and out, strings, statuses.
  public :: pjrt_open_runtime, pjrt_load_model, pjrt_run, pjrt_tensor_of, pjrt_transposed, pjrt_fortran_shape, &
    pjrt_inputs_of, pjrt_outputs_of, pjrt_ok, pjrt_check, pjrt_message

  ! pjrt_tensor_of(a): a tensor over the array `a` (any rank 0..8, TARGET, contiguous), its
  ! dimensions reversed (Fortran a(d1, ..., dk) is C's [dk, ..., d1]); no copy.
  interface pjrt_tensor_of
    module procedure tensor_of_f64, tensor_of_f32, tensor_of_s32, tensor_of_s64
  end interface pjrt_tensor_of

  ! pjrt_transposed(a): a copy of a rank-2 or rank-3 array with its dimensions reversed
  ! (b(j, i) = a(i, j); b(k, j, i) = a(i, j, k)): for a model that reads the array in the same
  ! dimension order as Fortran writes it. Only when asked: pjrt_tensor_of never copies.
  interface pjrt_transposed
    module procedure transposed2_f64, transposed3_f64, transposed2_f32, transposed3_f32
  end interface pjrt_transposed

contains

  ! A runtime on `plugin` (a name such as "cpu" or a path; absent: PJRT_PLUGIN, else a CPU
  ! plugin), with an optional compile cache folder and client options ("NAME=VALUE,...").
  function pjrt_open_runtime(runtime, plugin, compile_cache, client_options) result(status)
    type(c_ptr), intent(out) :: runtime
    character(*), intent(in), optional :: plugin, compile_cache, client_options
    type(c_ptr) :: status
    type(pjrt_options) :: options
    character(kind=c_char, len=:), allocatable, target :: plugin_c, cache_c, client_c
    options%struct_size = c_sizeof(options)
    if (present(plugin)) then
      plugin_c = trim(plugin) // c_null_char
      options%plugin = c_loc(plugin_c)
    end if
    if (present(compile_cache)) then
      cache_c = trim(compile_cache) // c_null_char
      options%compile_cache = c_loc(cache_c)
    end if
    if (present(client_options)) then
      client_c = trim(client_options) // c_null_char
      options%client_options = c_loc(client_c)
    end if
    status = pjrt_runtime_new(options, runtime)
  end function pjrt_open_runtime

  ! Loads the model file `path` (.jaxexport, .mlir, .mlirbc, an AOT artifact) onto `runtime`,
  ! with an optional safetensors file of weights bound to its inputs by name.
  function pjrt_load_model(runtime, path, model, weights) result(status)
    type(c_ptr), intent(in) :: runtime
    character(*), intent(in) :: path
    type(c_ptr), intent(out) :: model
    character(*), intent(in), optional :: weights
    type(c_ptr) :: status
    character(kind=c_char, len=:), allocatable, target :: path_c, weights_c
    type(c_ptr) :: weights_ptr
    path_c = trim(path) // c_null_char
    weights_ptr = c_null_ptr
    if (present(weights)) then
      weights_c = trim(weights) // c_null_char
      weights_ptr = c_loc(weights_c)
    end if
    status = pjrt_model_load(runtime, c_loc(path_c), weights_ptr, model)
  end function pjrt_load_model

  ! Runs `model` on `inputs`, writing `outputs` (each pjrt_tensor_of an array of yours, or
  ! pjrt_tensor() with no data: allocated by the library, freed with pjrt_tensor_free).
  function pjrt_run(model, inputs, outputs) result(status)
    type(c_ptr), intent(in) :: model
    type(pjrt_tensor), intent(in) :: inputs(:)
    type(pjrt_tensor), intent(inout) :: outputs(:)
    type(c_ptr) :: status
    status = pjrt_model_run(model, inputs, size(inputs, kind=c_size_t), outputs, size(outputs, kind=c_size_t))
  end function pjrt_run

  ! The model's inputs as a Fortran array of tensors (the model's memory: valid until
  ! pjrt_model_free); a symbolic dimension is -1. Fortran order: pjrt_fortran_shape.
  function pjrt_inputs_of(signature) result(tensors)
    type(pjrt_signature), intent(in) :: signature
    type(pjrt_tensor), pointer :: tensors(:)
    call c_f_pointer(signature%inputs, tensors, [signature%n_inputs])
  end function pjrt_inputs_of

  ! The model's outputs, as pjrt_inputs_of gives its inputs.
  function pjrt_outputs_of(signature) result(tensors)
    type(pjrt_signature), intent(in) :: signature
    type(pjrt_tensor), pointer :: tensors(:)
    call c_f_pointer(signature%outputs, tensors, [signature%n_outputs])
  end function pjrt_outputs_of

  ! A tensor's dimensions in Fortran order (C's reversed): the shape of the Fortran array that
  ! holds it.
  function pjrt_fortran_shape(tensor) result(shape)
    type(pjrt_tensor), intent(in) :: tensor
    integer(c_int64_t), allocatable :: shape(:)
    integer :: ndim
    ndim = max(0, min(int(tensor%ndim), PJRT_MAX_NDIM))
    shape = tensor%dims(ndim:1:-1)
  end function pjrt_fortran_shape

  ! The text of a status (c_null_ptr: "OK"); the status stays yours to free.
  function pjrt_message(status) result(message)
    type(c_ptr), intent(in) :: status
    character(len=:), allocatable :: message
    character(kind=c_char), pointer :: chars(:)
    integer :: n
    type(c_ptr) :: text
    text = pjrt_status_message(status)
    call c_f_pointer(text, chars, [huge(0)])
    n = 0
    do while (chars(n + 1) /= c_null_char)
      n = n + 1
    end do
    allocate (character(len=n) :: message)
    message = transfer(chars(1:n), message)
  end function pjrt_message

  ! .true. when `status` is success; else .false., with its message in `message` (when given)
  ! and its code in `code` (when given), and the status freed.
  function pjrt_ok(status, message, code) result(ok)
    type(c_ptr), intent(in) :: status
    character(len=:), allocatable, intent(out), optional :: message
    integer(c_int32_t), intent(out), optional :: code
    logical :: ok
    ok = .not. c_associated(status)
    if (present(code)) code = pjrt_status_code(status)
    if (present(message)) message = pjrt_message(status)
    if (.not. ok) call pjrt_status_free(status)
  end function pjrt_ok

  ! Stops the program (error stop) with "what: message" on stderr when `status` is a failure.
  subroutine pjrt_check(status, what)
    type(c_ptr), intent(in) :: status
    character(*), intent(in) :: what
    character(len=:), allocatable :: message
    if (pjrt_ok(status, message)) return
    write (error_unit, '(a, ": ", a)') what, message
    error stop 1
  end subroutine pjrt_check

  ! A tensor over `data` of `dtype`, `elements` of `element_bytes` each, Fortran shape `shape`.
  function describe(data, dtype, element_bytes, shape, contiguous) result(tensor)
    type(c_ptr), intent(in) :: data
    integer(c_int32_t), intent(in) :: dtype
    integer, intent(in) :: element_bytes
    integer(c_int64_t), intent(in) :: shape(:)
    logical, intent(in) :: contiguous
    type(pjrt_tensor) :: tensor
    integer :: k
    tensor%dtype = dtype
    tensor%ndim = int(size(shape), c_int32_t)
    do k = 1, min(size(shape), PJRT_MAX_NDIM)
      tensor%dims(k) = shape(size(shape) + 1 - k)
    end do
    tensor%nbytes = int(product(shape) * element_bytes, c_size_t)
    ! A non-contiguous array gives no data: pjrt_run refuses it with a status.
    if (contiguous) tensor%data = data
  end function describe

  function tensor_of_f64(a) result(tensor)
    real(c_double), intent(in), target :: a(..)
    type(pjrt_tensor) :: tensor
    type(c_ptr) :: data
    data = c_null_ptr
    if (is_contiguous(a)) data = c_loc(a)
    tensor = describe(data, PJRT_DTYPE_F64, 8, shape(a, kind=c_int64_t), is_contiguous(a))
  end function tensor_of_f64

  function tensor_of_f32(a) result(tensor)
    real(c_float), intent(in), target :: a(..)
    type(pjrt_tensor) :: tensor
    type(c_ptr) :: data
    data = c_null_ptr
    if (is_contiguous(a)) data = c_loc(a)
    tensor = describe(data, PJRT_DTYPE_F32, 4, shape(a, kind=c_int64_t), is_contiguous(a))
  end function tensor_of_f32

  function tensor_of_s32(a) result(tensor)
    integer(c_int32_t), intent(in), target :: a(..)
    type(pjrt_tensor) :: tensor
    type(c_ptr) :: data
    data = c_null_ptr
    if (is_contiguous(a)) data = c_loc(a)
    tensor = describe(data, PJRT_DTYPE_S32, 4, shape(a, kind=c_int64_t), is_contiguous(a))
  end function tensor_of_s32

  function tensor_of_s64(a) result(tensor)
    integer(c_int64_t), intent(in), target :: a(..)
    type(pjrt_tensor) :: tensor
    type(c_ptr) :: data
    data = c_null_ptr
    if (is_contiguous(a)) data = c_loc(a)
    tensor = describe(data, PJRT_DTYPE_S64, 8, shape(a, kind=c_int64_t), is_contiguous(a))
  end function tensor_of_s64

  function transposed2_f64(a) result(b)
    real(c_double), intent(in) :: a(:, :)
    real(c_double), allocatable :: b(:, :)
    b = transpose(a)
  end function transposed2_f64

  function transposed3_f64(a) result(b)
    real(c_double), intent(in) :: a(:, :, :)
    real(c_double), allocatable :: b(:, :, :)
    b = reshape(a, [size(a, 3), size(a, 2), size(a, 1)], order=[3, 2, 1])
  end function transposed3_f64

  function transposed2_f32(a) result(b)
    real(c_float), intent(in) :: a(:, :)
    real(c_float), allocatable :: b(:, :)
    b = transpose(a)
  end function transposed2_f32

  function transposed3_f32(a) result(b)
    real(c_float), intent(in) :: a(:, :, :)
    real(c_float), allocatable :: b(:, :, :)
    b = reshape(a, [size(a, 3), size(a, 2), size(a, 1)], order=[3, 2, 1])
  end function transposed3_f32
end module pjrt
